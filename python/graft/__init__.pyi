"""Typed stubs of the graft package (docstrings in graft/__init__.py)."""
import os
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

from . import testing as testing

__version__: str

PathLike = Union[str, os.PathLike[str]]
Options = Optional[Mapping[str, Any]]
Shapes = Optional[Mapping[str, Sequence[int]]]

class GraftError(RuntimeError):
    status: str
    file: str
    layer: str
    op: str
    line: int
    col: int
    detail: str

class BackendOption:
    name: str
    type: str
    default: str
    help: str
    choices: Optional[List[str]]

class Backend(str):
    description: str
    runtime_kind: Optional[str]
    options: List[BackendOption]
    patterns: List[str]
    version: Optional[str]
    path: Optional[str]

def load_backend(path: PathLike) -> None: ...
def backends() -> List[Backend]: ...

class NodeArg:
    name: str
    shape: List[Union[int, str, None]]
    type: str
    dtype: Optional[np.dtype]

class IRModule:
    source: Optional[str]
    def script(self, spans: bool = ..., metadata: bool = ...) -> str: ...
    def show(self) -> None: ...
    def save(self, path: PathLike) -> None: ...
    def layers(self) -> List[str]: ...
    def signature(self) -> Tuple[List[NodeArg], List[NodeArg]]: ...
    def get_inputs(self) -> List[NodeArg]: ...
    def get_outputs(self) -> List[NodeArg]: ...

def import_onnx(path: PathLike, shapes: Shapes = ..., spans: bool = ...) -> IRModule: ...
def parse(text: str, name: str = ...) -> IRModule: ...
def load_module(path: PathLike) -> IRModule: ...
def optimize(mod: IRModule, passes: Optional[Sequence[str]] = ..., opt_level: Optional[int] = ...) -> IRModule: ...

class Region:
    name: str
    backend: str
    layers: List[str]
    ops: List[str]
    composites: List[str]

class PartitionResult:
    module: IRModule
    report: Dict[str, Any]
    regions: List[Region]
    @property
    def coverage(self) -> Dict[str, Any]: ...
    @property
    def host(self) -> List[Dict[str, Any]]: ...
    def query(self) -> Dict[str, str]: ...

def partition(mod: Union[IRModule, PathLike], backends: Union[str, Sequence[str]] = ...,
              patterns: Optional[PathLike] = ..., options: Options = ...) -> PartitionResult: ...

class InferenceSession:
    def __init__(self, path_or_model: Union[PathLike, IRModule, bytes], backends: Optional[Sequence[str]] = ...,
                 options: Options = ..., shapes: Shapes = ..., profile: bool = ..., optimize: bool = ...,
                 profile_file_prefix: str = ...) -> None: ...
    def get_inputs(self) -> List[NodeArg]: ...
    def get_outputs(self) -> List[NodeArg]: ...
    def get_providers(self) -> List[str]: ...
    def get_provider_options(self) -> Dict[str, Any]: ...
    def get_modelmeta(self) -> Dict[str, Any]: ...
    def regions(self) -> List[Tuple[str, str, List[str]]]: ...
    def run(self, output_names: Optional[Sequence[str]], input_feed: Mapping[str, Any],
            run_options: Any = ...) -> List[np.ndarray]: ...
    def run_with_list(self, inputs: Sequence[np.ndarray]) -> List[np.ndarray]: ...
    def start_profiling(self) -> None: ...
    def end_profiling(self) -> str: ...

def load(path: PathLike, options: Options = ...) -> InferenceSession: ...
def build(src: Union[PathLike, IRModule], dst: PathLike, backends: Optional[Sequence[str]] = ...,
          options: Options = ..., shapes: Shapes = ..., optimize: bool = ...) -> str: ...

class DiffResult:
    doc: Dict[str, Any]
    rows: List[Dict[str, Any]]
    first_divergence: Optional[Dict[str, Any]]
    summary: Dict[str, Any]
    regions: List[Dict[str, Any]]
    @property
    def ok(self) -> bool: ...
    def where(self, row: Dict[str, Any]) -> str: ...
    def table(self, limit: Optional[int] = ...) -> str: ...
    def describe_first(self) -> str: ...

def diff(model: Union[PathLike, IRModule], backend: Union[str, Sequence[str]] = ..., against: str = ...,
         inputs: Optional[Mapping[str, Any]] = ..., rtol: float = ..., atol: float = ..., atol_scale: float = ...,
         shapes: Shapes = ..., options: Options = ..., optimize: bool = ...,
         perturb: Optional[Callable[[str, np.ndarray], bool]] = ..., atol_steps: float = ...,
         ort_tensors: str = ...) -> DiffResult: ...
def explore(model: Union[PathLike, IRModule], backend: Union[str, Sequence[str]] = ..., output: PathLike = ...,
            profile: bool = ..., diff: bool = ..., against: str = ..., inputs: Optional[Mapping[str, Any]] = ...,
            rtol: float = ..., atol: float = ..., atol_scale: float = ..., shapes: Shapes = ..., options: Options = ...,
            optimize: bool = ...) -> str: ...
