import os
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Union

import numpy as np

import graft

class BackendMismatch(AssertionError):
    diff: Optional[graft.DiffResult]
    mismatches: List[Dict[str, Any]]

def reference_outputs(model: str, reference: str, inputs: Mapping[str, np.ndarray],
                      shapes: Optional[Mapping[str, Sequence[int]]] = ...,
                      options: Optional[Mapping[str, Any]] = ...) -> List[np.ndarray]: ...
def compare_outputs(actual: Sequence[np.ndarray], expected: Sequence[np.ndarray], rtol: float, atol: float,
                    names: Optional[Sequence[str]] = ...) -> List[Dict[str, Any]]: ...
def assert_backend_matches(model: Union[str, os.PathLike[str]], backend: str, reference: str = ...,
                           inputs: Optional[Mapping[str, Any]] = ..., rtol: float = ..., atol: float = ...,
                           shapes: Optional[Mapping[str, Sequence[int]]] = ...,
                           options: Optional[Mapping[str, Any]] = ..., seed: int = ..., per_layer: bool = ...,
                           perturb: Optional[Callable[[str, np.ndarray], bool]] = ...,
                           diff_rtol: Optional[float] = ..., diff_atol_scale: float = ...) -> None: ...
def matrix(backends: Optional[Sequence[str]] = ..., models: Sequence[str] = ...) -> Any: ...
