"""Where the item statistics run: an embedded DuckDB (the default) or a Spark session, both through Ibis.

:class:`Engine` is the choice, made once from the options (:meth:`Engine.from_options`)
and passed down; it opens the backend that runs the Ibis expressions of the item
statistics, and :func:`read_parquet` / :func:`table_from_frame` turn an input into an Ibis
table without loading it whole. A new engine touches this module only.

* ``"duckdb"``: in-process, with a memory limit, spilling to a folder of its own. Item
  tables in memory go through it too (registered, not copied).
* ``"spark"``: the active session, else a new one configured by Spark's own configuration
  (``spark-defaults.conf``, ``PYSPARK_SUBMIT_ARGS``), an explicit master set over it, else
  ``local[*]``. A session jagged builds has no web UI, a local one listens on the loopback
  interface only, and the JVM prints nothing (:func:`spark_session`). Needs
  ``pip install jagged[spark]`` and Java 17.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
import threading
import uuid
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

from jagged.errors import JaggedInputError
from jagged.option_checks import shown
from jagged.paths import DUCKDB_CONFIG, confine_duckdb, engine_path, parquet_parts, spill_folder
from jagged.text import one_line

#: The engines, the first the default.
ENGINES: tuple[str, ...] = ("duckdb", "spark")
#: The Spark master when neither ``spark_master`` nor Spark's configuration names one.
DEFAULT_SPARK_MASTER = "local[*]"
#: DuckDB memory cap of the statistics' sessions (they spill to a temporary folder beyond it).
DUCKDB_MEMORY_LIMIT = "512MB"
#: Spark master URLs ``spark_master`` may be: local, local[N], local[*] (each with an optional number of task
#: failures, local[4,2]), a standalone cluster spark://HOST:PORT[,HOST:PORT...], yarn, k8s://[https://]HOST[:PORT].
SPARK_MASTER = re.compile(r"local(\[(\*|[1-9]\d{0,4})(,[1-9]\d{0,4})?\])?|spark://[\w.-]+:\d{1,5}(,[\w.-]+:\d{1,5})*"
                          r"|yarn|k8s://(https?://)?[\w.-]+(:\d{1,5})?/?")
#: Seconds a session with a cluster's master may take (Java's start included) before the run stops with one line.
SPARK_CONNECT_SECONDS = 25


def check_engine(engine: str | None) -> str:
    """``engine`` if it is one of :data:`ENGINES` (None: the default), else a :class:`JaggedInputError`."""
    if engine is None:
        return ENGINES[0]
    if engine not in ENGINES:
        raise JaggedInputError(f"engine must be one of {', '.join(repr(e) for e in ENGINES)}, not {engine!r}")
    return engine


def configured_spark_master() -> str | None:
    """The master Spark's own configuration names (``PYSPARK_SUBMIT_ARGS --master``, spark-defaults.conf), or None."""
    args = os.environ.get("PYSPARK_SUBMIT_ARGS", "").split()
    if "--master" in args[:-1]:
        return args[args.index("--master") + 1]
    conf_dir = os.environ.get("SPARK_CONF_DIR") or (
        str(Path(os.environ["SPARK_HOME"], "conf")) if os.environ.get("SPARK_HOME") else None)
    if conf_dir:
        defaults = Path(conf_dir, "spark-defaults.conf")
        if defaults.is_file():
            for line in defaults.read_text(errors="replace").splitlines():
                parts = line.split(None, 1)
                if len(parts) == 2 and parts[0] == "spark.master":
                    return parts[1].strip()
    return None


def check_spark_master(master: Any) -> str:
    """``master`` if it is a Spark master URL (:data:`SPARK_MASTER`), else a one-line :class:`JaggedInputError`."""
    if not isinstance(master, str) or not SPARK_MASTER.fullmatch(master):
        raise JaggedInputError(f"--spark-master {shown(master)}: not a Spark master URL (local, local[N], local[*], "
                               "spark://HOST:PORT, yarn, k8s://URL)")
    return master


def _reach(master: str) -> None:
    """Refuse at once a cluster master that no socket reaches (``spark://`` and ``k8s://`` URLs)."""
    import socket

    if master.startswith("spark://"):
        places = [place.rsplit(":", 1) for place in master[len("spark://"):].split(",")]
    elif master.startswith("k8s://"):
        url = master[len("k8s://"):].split("://")[-1].rstrip("/")
        places = [url.rsplit(":", 1) if ":" in url else [url, "443"]]
    else:
        return
    reasons = []
    for host, port in places:
        try:
            socket.create_connection((host, int(port)), timeout=5).close()
            return
        except OSError as exc:
            reasons.append(f"{host}:{port}: {exc.strerror or type(exc).__name__}")
    raise JaggedInputError(f"--spark-master {master}: cannot reach the master ({'; '.join(reasons)})")


def _spark_reason(exc: BaseException | str) -> str:
    """The line of a Spark (Py4J) error, or of the JVM's output, that says what went wrong."""
    lines = [line.strip(" :") for line in str(exc).splitlines() if line.strip(" :")]
    told = [line for line in lines if ("Exception" in line or "Error" in line) and "error occurred while" not in line]
    return one_line((told or lines or [type(exc).__name__])[0], 300)


def spark_session(spark_master: str | None = None) -> Any:
    """The active Spark session, or a new one (master: ``spark_master``, else Spark's configuration, else local[*]).

    ``spark_master`` (:data:`SPARK_MASTER`) is set over Spark's configuration only when
    given; an active session is reused as it is (with another master: an error).

    Raises
    ------
    JaggedInputError
        No PySpark or Java; a master that is no master URL; a cluster master no socket
        reaches, or that does not take the session within :data:`SPARK_CONNECT_SECONDS`; any
        failure to start. One line each, and no output of the JVM on the terminal.

    Notes
    -----
    A session jagged builds serves no web UI (``spark.ui.enabled=false``), and with a
    ``local`` master binds its driver to 127.0.0.1: nothing listens on the network. The
    JVM's own output (log4j, warnings) is read for the reason of a failure, shown nowhere.
    """
    try:
        from pyspark import SparkConf, SparkContext
        from pyspark.java_gateway import launch_gateway
        from pyspark.sql import SparkSession
    except ImportError:
        raise JaggedInputError("engine 'spark' needs PySpark: pip install 'jagged[spark]' (and Java 17)") from None
    if spark_master:
        check_spark_master(spark_master)
        if not spark_master.startswith("local"):
            _reach(spark_master)
    active = SparkSession.getActiveSession()
    if active is not None:
        return _same_master(active, spark_master)
    configured = None if spark_master else configured_spark_master()
    master = spark_master or configured or DEFAULT_SPARK_MASTER
    conf = SparkConf().setAll([("spark.ui.enabled", "false"), ("spark.ui.showConsoleProgress", "false")])
    if configured is None:
        conf.setMaster(master)
    local = master.startswith("local")
    label = f"--spark-master {master}" if spark_master else f"engine 'spark' (master {master})"
    if local:
        conf.setAll([("spark.driver.bindAddress", "127.0.0.1"), ("spark.driver.host", "127.0.0.1")])
    elif not spark_master:
        _reach(master)
    built: dict[str, Any] = {}
    jvm_output = tempfile.TemporaryFile()  # the JVM's own output (log4j, warnings): read for a reason, shown nowhere

    def build() -> None:
        try:
            if SparkContext._gateway is None:
                SparkContext._ensure_initialized(gateway=launch_gateway(conf, popen_kwargs={
                    "stdout": jvm_output, "stderr": jvm_output}))
            built["session"] = SparkSession.builder.config(conf=conf).getOrCreate()
        except Exception as exc:
            built["error"] = exc

    worker = threading.Thread(target=build, name="jagged-spark-session", daemon=True)
    worker.start()
    worker.join(None if local else SPARK_CONNECT_SECONDS)
    if worker.is_alive():
        raise JaggedInputError(f"{label}: no session with the master within {SPARK_CONNECT_SECONDS} s "
                               "(Java started and the master did not take it)" if SparkContext._gateway is not None else
                               f"{label}: Java did not start within {SPARK_CONNECT_SECONDS} s")
    if "error" in built:
        if SparkContext._gateway is None:  # spark-submit or Java stopped: its output says why, if anything does
            jvm_output.seek(0)
            said = jvm_output.read(1 << 16).decode("utf-8", errors="replace")
            if said.strip():
                raise JaggedInputError(f"{label}: Spark did not start: {_spark_reason(said)}")
            raise JaggedInputError(f"engine 'spark' could not start Java (Java 17 is needed): "
                                   f"{_spark_reason(built['error'])}")
        raise JaggedInputError(f"{label}: cannot start a Spark session: "
                               f"{_spark_reason(built['error'])}")
    return _same_master(built["session"], spark_master)


def _same_master(session: Any, spark_master: str | None) -> Any:
    """``session``, unless it runs with another master than the one asked for (a process has one session)."""
    if spark_master and session.sparkContext.master != spark_master:
        raise JaggedInputError(f"--spark-master {spark_master}: this process already runs a Spark session with "
                               f"master {session.sparkContext.master}; one process has one session")
    return session


@dataclass(frozen=True)
class Engine:
    """Where the item statistics run, made once from the options and passed down as one value.

    ``kind`` is checked (:func:`check_engine`; None: the default), ``master`` (the Spark
    master URL, see :func:`spark_session`) checked when given (:func:`check_spark_master`);
    ``memory_limit`` and ``threads`` are DuckDB's (it spills beyond the limit; threads
    default to the CPU count, at most 4).
    """

    kind: str | None = None
    master: str | None = None
    memory_limit: str = DUCKDB_MEMORY_LIMIT
    threads: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", check_engine(self.kind))
        object.__setattr__(self, "master", check_spark_master(self.master) if self.master else None)

    @classmethod
    def from_options(cls, options: Any) -> "Engine":
        """The engine of an :class:`jagged.options.AnalysisOptions` (``engine``, ``spark_master``)."""
        return cls(options.engine, options.spark_master or None)

    @classmethod
    def of(cls, engine: "Engine | str | None") -> "Engine":
        """``engine`` itself, or the engine of that kind (None: the default)."""
        return engine if isinstance(engine, Engine) else cls(engine)

    @property
    def spark(self) -> bool:
        """Whether the statistics run on Spark."""
        return self.kind == "spark"

    def session(self) -> Any:
        """The Spark session (:func:`spark_session` with :attr:`master`)."""
        return spark_session(self.master)

    def connect(self) -> tuple[Any, Callable[[], None]]:
        """An Ibis backend and the function that closes it (see :meth:`backend`).

        DuckDB is given a spill folder of its own (mode 0700), removed by ``close``; it
        installs and loads no extension, and opens no file but the input
        :func:`read_parquet` gives it. The Spark session is shared and left running.
        """
        import ibis

        # ibis 12's DuckDB backend calls DuckDB's deprecated fetch_arrow_table(): not the user's business
        warnings.filterwarnings("ignore", message=r"fetch_arrow_table\(\) is deprecated",
                                category=DeprecationWarning, module=r"ibis\.backends\.duckdb")
        if self.spark:  # PySpark's and Ibis's own deprecations (pandas 3), Py4J's sockets: not the user's either
            for category in (DeprecationWarning, FutureWarning):
                warnings.filterwarnings("ignore", category=category, module=r"(pyspark|py4j|ibis)(\.|$)")
            warnings.filterwarnings("ignore", message=r"unclosed <socket", category=ResourceWarning)
            return ibis.pyspark.connect(self.session()), lambda: None
        spill = spill_folder()
        con = ibis.duckdb.connect(database=":memory:", memory_limit=self.memory_limit,
                                  threads=self.threads or min(os.cpu_count() or 1, 4), temp_directory=spill,
                                  preserve_insertion_order=False, **DUCKDB_CONFIG)
        con._jagged_spill = spill

        def close() -> None:
            with contextlib.suppress(Exception):
                con.disconnect()
            if os.path.isdir(spill):
                shutil.rmtree(spill, ignore_errors=True)

        return con, close

    @contextlib.contextmanager
    def backend(self) -> Iterator[Any]:
        """An Ibis backend for the statistics (:meth:`connect`), closed on exit."""
        con, close = self.connect()
        try:
            yield con
        finally:
            close()


#: Spark SQL type of each Ibis type :func:`table_from_frame` is given.
_SPARK_TYPES = {"string": "string", "float64": "double", "int64": "bigint", "boolean": "boolean"}
#: Arrow type of each Ibis type :func:`table_from_frame` is given.
_ARROW_TYPES = {"string": "string", "float64": "float64", "int64": "int64", "boolean": "bool"}


def table_from_frame(con: Any, frame: Any, schema: dict[str, str]) -> Any:
    """A DataFrame as an Ibis table of ``con``, with the Ibis type of each column in ``schema``.

    DuckDB scans an Arrow view of it (numeric columns not copied); Spark gets a temporary
    view. What is derived from the table runs (and is cached) on ``con``.
    """
    import ibis

    name = "jagged_" + uuid.uuid4().hex
    if con.name == "duckdb":
        import pyarrow as pa

        # converted to Arrow once (numeric columns without a copy) and registered as a view: DuckDB scans it in place
        arrow = pa.Table.from_pandas(frame[list(schema)], preserve_index=False, nthreads=1, schema=pa.schema(
            [(column, _ARROW_TYPES[kind]) for column, kind in schema.items()]))
        _confined(con, [])  # rows in memory: no file to open
        return con.create_view(name, ibis.memtable(arrow), overwrite=True)
    session = spark_session()
    ddl = ", ".join(f"`{column}` {_SPARK_TYPES[kind]}" for column, kind in schema.items())
    values = frame[list(schema)].astype(object).where(frame[list(schema)].notna(), None)
    session.createDataFrame(values, schema=ddl).createOrReplaceTempView(name)
    return con.table(name)


def _confined(con: Any, files: list[Path]) -> list[str]:
    """Confine a DuckDB backend to ``files`` the first time it is used (:func:`jagged.paths.confine_duckdb`).

    Returns the files as DuckDB reads them. A connection reads one input: asking it for
    other files later is a programming error.
    """
    allowed = getattr(con, "_jagged_files", None)
    if allowed is None:
        con._jagged_files = {os.fspath(f) for f in files}
        spill = getattr(con, "_jagged_spill", None)
        return confine_duckdb(con.con, files, [spill] if spill else [])
    if not {os.fspath(f) for f in files} <= allowed:
        raise RuntimeError("this DuckDB connection may read only the input it was first given; connect again")
    return [engine_path(f) for f in files]


def read_parquet(con: Any, path: str | Path) -> Any:
    """An Ibis table over a Parquet file, or a hive-partitioned folder of them (keys as text columns), read lazily.

    The engine reads exactly the file, or the folder's parts as the reader checked them
    (:func:`jagged.paths.parquet_parts`), as literal paths, never a glob. DuckDB may open
    nothing else (:func:`jagged.paths.confine_duckdb`); Spark gets the parts with globbing
    off and the folder as the partitions' base.
    """
    path = Path(os.path.abspath(path))
    if not path.exists():
        raise JaggedInputError(f"{path.name}: no such file or folder")
    folder = path.is_dir()
    parts = parquet_parts(path) if folder else [path]
    if con.name == "duckdb":
        files = _confined(con, parts)
        if folder:
            return con.read_parquet(files, hive_partitioning=True, hive_types_autocast=False)
        return con.read_parquet(files)
    # Spark discovers the partitions from the parts' paths below the folder; their values stay text (a model
    # called 007 is not 7): the data files' schema plus the partition keys as strings, given to the reader
    from pyspark.sql.types import StringType, StructField

    session = spark_session()
    reader = session.read.option("__globPaths__", "false")  # Spark's own switch: paths are files, not patterns
    if folder:
        schema = reader.parquet(str(parts[0])).schema
        for part in parts[0].relative_to(path).parts[:-1]:
            key = part.split("=", 1)[0]
            if "=" in part and key not in schema.fieldNames():
                schema = schema.add(StructField(key, StringType(), True))
        reader = reader.option("basePath", str(path)).schema(schema)
    frame = reader.parquet(*map(str, parts))
    name = "jagged_" + uuid.uuid4().hex
    frame.createOrReplaceTempView(name)
    return con.table(name)


def in_memory_items(data: Any, what: str = "the item response model (IRT fit)", *,
                    engine: Engine | str | None = None) -> Any:
    """The item table of ``data`` (a Dataset or an item table) in memory, for what needs the response matrix.

    The sums over rows run in the engine at any scale, but the item response model's EM
    works on the models × items matrix in numpy. An input aggregated out of core, or
    ``engine="spark"``, gets a one-line :class:`JaggedInputError` saying so, naming ``what``.
    """
    import pandas as pd

    spark = Engine.of(engine).spark
    if isinstance(data, pd.DataFrame) and not spark:
        return data
    items = data if isinstance(data, pd.DataFrame) else getattr(data, "items", None)
    name = getattr(data, "source", "<item table>")
    hint = ("it runs on what fits in memory: select models or domains (--models, --domains) or a sample of the "
            "items into a table of up to a few million rows")
    if spark:
        raise JaggedInputError(f"{name}: {what} needs the response matrix in memory and does not run on Spark; {hint}")
    if items is None:
        raise JaggedInputError(f"{name}: {what} needs the response matrix in memory, and this input is aggregated out "
                               f"of core; {hint}")
    return items
