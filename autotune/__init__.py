"""The auto-tuner behind `polyimage tune`: it fits the cost model's weights to this machine.

store       measurements, one JSON line each, written as they are made (resumable)
subjects    the training set: the apps and seeded random pipelines at a size
candidates  schedules to measure, and the model's cost of a schedule
measure     interleaved timing with early stopping
fit         the search over log-weights
tuner       the phases within the budget, the held-out check, the weights file
report      the table and the plot
"""
