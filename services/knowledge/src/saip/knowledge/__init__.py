"""The saip knowledge service: documents, ingest, chunking, lexical embeddings, pipelines, search, knowledge tools."""
