"""Lexicon JSON files of the records phi writes (`io.phi.*` becomes the configured prefix)."""
