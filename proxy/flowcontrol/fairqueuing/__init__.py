"""Fair queuing for one priority level (upstream's ``util/flowcontrol/fairqueuing``)."""
