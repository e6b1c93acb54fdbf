"""The proof against races at every latency (issue 22): user-style projects through pytester."""
