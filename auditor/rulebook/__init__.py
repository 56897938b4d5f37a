"""Framework knowledge, read from `rules/*.toml`: the one reader of the rules files.

files       reads and schema-checks one file, filters its entries to a release (`load`)
schema      the tables and keys a rules file may hold
frameworks  each file's `[framework]` table: the list of frameworks, launcher stacks
stages      the config pipeline's stages and entries for the releases in use
interpreter what the call-graph interpreter knows (P2P APIs, symbols, groups, entry points)
apis        torch's P2P API table, indexed for finding sites
launchers   how a launch script is spelled (launchers, wrappers, Megatron-LM's flags)
"""

from auditor.rulebook.files import RuleSet, load, rules_dir, version_in

__all__ = ["RuleSet", "load", "rules_dir", "version_in"]
