"""Formatters: each turns a scan document (the JSON contract) into one output format."""
