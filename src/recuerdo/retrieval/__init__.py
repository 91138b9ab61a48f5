"""Retrieval: chunks, the lexical and meaning stages, fusion and context packing."""
