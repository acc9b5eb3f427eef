"""The files a command reads, guarded while it runs: never replaced by its own outputs, nor
another graph's weights (guard.py), and never read past their end when another program
shrinks them under a memory map (mapped.py). The command line opens both around every
command (`tracking()`, `guarding()`); both sit below every reader and writer, which call
them."""
