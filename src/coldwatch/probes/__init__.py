"""Turn host output into evidence. Parsers are pure and never raise on remote output."""
