"""The nbconvert report template and the batch index template, shipped as ``jagged.templates``
(see jagged.resources)."""
