"""The front end: what users write."""
from .constructs import Case, Function, Image, Interval, Op, Reduce, Reduction, Stencil
from .expr import (Abs, Cast, Clamp, Condition, Cos, Exp, Expf, Floor, Log, Logf, Max, Min,
                   Parameter, Pow, Powf, Select, Sin, Sqrt, Sqrtf, Variable)
from .types import Char, Double, Float, Int, Long, Short, UChar, UInt, ULong, UShort

__all__ = ["Case", "Function", "Image", "Interval", "Op", "Reduce", "Reduction", "Stencil", "Abs",
           "Cast", "Clamp", "Condition", "Cos", "Exp", "Expf", "Floor", "Log", "Logf", "Max",
           "Min", "Parameter", "Pow", "Powf", "Select", "Sin", "Sqrt", "Sqrtf", "Variable",
           "Char", "Double", "Float", "Int", "Long", "Short", "UChar", "UInt", "ULong", "UShort"]
