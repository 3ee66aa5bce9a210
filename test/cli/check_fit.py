"""check_fit.py FIT.json TOLERANCE [PARAMETERS]: the fit converged, its gradient check found no difference,
alpha and beta lie within TOLERANCE of their truth when it is known, and the model has PARAMETERS
parameters when given."""
import json
import sys

path, tolerance = sys.argv[1], float(sys.argv[2])
with open(path) as f:
    fit = json.load(f)
problems = []
if len(sys.argv) > 3 and fit["parameters"] != int(sys.argv[3]):
    problems.append(f"{fit['parameters']} parameters, expected {sys.argv[3]}")
if fit["converged"] is not True:
    problems.append(f"not converged: {fit['status']}")
if fit["gradient_check_max_abs_diff"] != 0:
    problems.append(f"cluster and in-process gradients differ by {fit['gradient_check_max_abs_diff']}")
for e in fit["estimates"]:
    if e["name"] in ("alpha", "beta") and e["truth"] is not None and abs(e["estimate"] - e["truth"]) > tolerance:
        problems.append(f"{e['name']} = {e['estimate']:.4f}, truth {e['truth']:.4f}, tolerance {tolerance}")
if problems:
    sys.exit(f"{path}: " + "; ".join(problems))
print(f"{path}: converged in {fit['iterations']} iterations on {fit['ranks']} rank(s); estimates within {tolerance}")
