"""The Pyomo standard-form bridge: a Pyomo model read as a sparse QP, and the point and multipliers loaded back."""
