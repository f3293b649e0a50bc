"""Artifact wing: convert, verify and lower saved models. Never imports the source (codemod) wing."""
