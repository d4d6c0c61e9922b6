"""This machine's model: measured with pmpredict.measure, inferred with pmpredict.infer,
extended by the forms each kernel needs."""
