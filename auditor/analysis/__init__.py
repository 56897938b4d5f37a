"""Analyses over what ranks issue: which run-time conditions turn an op sequence into a hang."""
