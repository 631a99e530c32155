"""Building generated C into an extension module, through a verified disk cache."""
