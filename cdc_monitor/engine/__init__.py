"""The scan engine's plumbing: what a window is made of (facts) and how its results are collected."""
