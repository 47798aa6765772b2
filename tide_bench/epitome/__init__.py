"""EPITOME (Sharma et al., EMNLP 2020): the three empathy communication mechanisms as a second
instrument beside TIDE's factors: the authors' labelled files, a local scorer fine-tuned on
them, and agreement statistics against their labels."""
