"""Test double: makes `import tiktoken` fail as if the package were not
installed, whatever the machine has (used only by corpus.test)."""

raise ImportError("No module named 'tiktoken' (simulated by corpus.test)")
