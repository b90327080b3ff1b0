"""Views: tables and text for a reader of the report (DataFrames and strings, no statistics)."""
