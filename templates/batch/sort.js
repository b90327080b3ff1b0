(function () {
  "use strict";
  var table = document.getElementById("models");
  if (!table || !table.tHead) { return; }
  var headers = table.tHead.rows[0].cells;
  function key(cell, type) {
    var raw = cell.getAttribute("data-sort");
    if (raw === null) { raw = cell.textContent; }
    if (type === "number") {
      var x = parseFloat(raw);
      return isNaN(x) ? null : x;
    }
    return raw.toLowerCase();
  }
  function sortBy(index) {
    var th = headers[index];
    var type = th.getAttribute("data-type");
    var ascending = th.getAttribute("aria-sort") !== "ascending";
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = key(a.cells[index], type);
      var y = key(b.cells[index], type);
      if (x === null && y === null) { return 0; }
      if (x === null) { return 1; }   /* missing values last, in either direction */
      if (y === null) { return -1; }
      var c = x < y ? -1 : (x > y ? 1 : 0);
      return ascending ? c : -c;
    });
    rows.forEach(function (row) { body.appendChild(row); });
    for (var i = 0; i < headers.length; i++) { headers[i].setAttribute("aria-sort", "none"); }
    th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
  }
  Array.prototype.forEach.call(headers, function (th, index) {
    var button = th.querySelector("button");
    if (button) { button.addEventListener("click", function () { sortBy(index); }); }
  });
})();
