"""Kueue: its objects, the analysis of queued jobs, and the job policies for its TAS."""
