"""The plan: what code, not the model, guarantees about R2's plan before anything runs.

``rules`` is R2's plan validator (the MUST NOT set, the structural rules, the size cap) and the
dispatcher that turns a plan into SubTasks with ids made by code and ordered groups.  Pure.
"""
