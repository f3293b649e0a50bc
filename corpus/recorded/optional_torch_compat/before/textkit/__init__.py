"""A small text-classification kit; torch is optional (the kit's tokenizer works without it)."""
