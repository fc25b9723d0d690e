def fast_path_plan(rules, limits, alternatives):
    return None
run_transitive=None
