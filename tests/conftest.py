"""Shared pytest setup: this folder is on sys.path, so tests import `helpers`."""
