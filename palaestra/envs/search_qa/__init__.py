"""search_qa: question answering by searching a local Wikipedia corpus (see README.md)."""
