"""The Goal Gradient Solver (R7): the loss maths, the controller that turns a round into a directive,
and its Prefect task."""
