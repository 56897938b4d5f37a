"""`p2paudit fix`: the remedies of findings as edits, applied to a copy and verified by a re-scan.

remedies  a finding's fix options, read from the rules (`remedy` of a check or env_var)
edits     text edits: one replacement of a file's characters, applied and shown as a diff
script    a remedy option as edits of a launch script's lines
pycode    a remedy option as a libcst codemod of a Python script (comments and layout kept)
verify    re-scan (and simulate) of the patched inputs in a temporary copy: gone, still there, new
plan      the pipeline: options per cause, each verified alone, merged, verified as one patch
report    what fix says, and each cause's patch on its finding in the scan document
"""
