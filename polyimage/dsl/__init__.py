"""The front end: what users write."""
from .constructs import Case, Function, Image, Interval, Op, Reduce, Reduction
from .expr import (Abs, Cast, Clamp, Condition, Cos, Exp, Floor, Log, Max, Min, Parameter, Pow,
                   Select, Sin, Sqrt, Variable)
from .types import Char, Double, Float, Int, Long, Short, UChar, UInt, ULong, UShort

__all__ = ["Case", "Function", "Image", "Interval", "Op", "Reduce", "Reduction", "Abs", "Cast",
           "Clamp", "Condition", "Cos", "Exp", "Floor", "Log", "Max", "Min", "Parameter", "Pow",
           "Select", "Sin", "Sqrt", "Variable", "Char", "Double", "Float", "Int", "Long", "Short",
           "UChar", "UInt", "ULong", "UShort"]
