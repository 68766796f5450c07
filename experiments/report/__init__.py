"""Tables and plots from the runs' metrics."""
