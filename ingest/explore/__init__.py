"""The trace explorer: every generation of the warehouse, its spans and their training documents, in a browser.

`queries` reads the built warehouse (marts and staging views) through one read-only DuckDB connection;
`spans` places spans in a generation's text and the matched window in a document; `page` is the single-page
app; `server` answers its JSON requests on 127.0.0.1; `static` writes the same data as paged files.
"""
