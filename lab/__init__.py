"""foliobatch lab: build, boot and test the foliobatch series on Linux 6.12."""
