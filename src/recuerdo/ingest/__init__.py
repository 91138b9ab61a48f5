"""Document ingestion: the kind is read from the bytes, the text from a well-kept parser."""
