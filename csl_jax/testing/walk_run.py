"""A small ambiguous QCFG for the inside pass and the fit's tests: `walk
run` is one rule and two (NT_1 NT_2), and `twice` / `and` nest either
way, so pairs have several derivations whose sums a test can check."""

GRAMMAR = """\
NT_1 twice ### NT_1 NT_1
NT_1 and NT_2 ### NT_1 NT_2
NT_1 NT_2 ### NT_1 NT_2
walk ### W
run ### R
walk run ### W R
"""
PAIRS = [("walk", "W"), ("walk twice", "W W"), ("walk and run", "W R"),
         ("walk and run twice", "W R W R"), ("walk run", "W R"),
         ("run walk and walk twice", "R W W W")]
