"""Solution methods above the core: the solver alone (direct), the working sets, kernel rows on demand.

They use the core (solvers.closing, solvers.registry, solvers.profiles), never solvers.api."""
