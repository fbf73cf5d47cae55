"""Campaign harnesses and evidence scripts: run by hand or by make targets, not part of the installed package."""
