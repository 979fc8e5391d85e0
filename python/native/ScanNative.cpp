//===- ScanNative.cpp - the native call path of compiled functions --------===//
//
// `mlir_scan._native.Function` calls one compiled function: it converts the
// arguments (NumPy arrays and scalars) into memref descriptors and values,
// calls the function's packed entry point through `mlirScanInvoke` (its call
// frame: python/runtime/ScanRuntime.h) with the GIL released, and wraps the
// results into NumPy arrays that own the memory the program allocated.
//
// Only the common, exact cases are handled here: an ndarray of the argument's
// dtype and rank, C-contiguous and aligned, with the static sizes; a Python or
// NumPy scalar of the argument's kind and range. Everything else goes to the
// `coerce(i, value)` callable the Python side gives (mlir_scan/runtime.py),
// which converts it or raises the error that names the argument, so all the
// conversion rules and messages live in one place, in Python.
//
// The graph builder's `Function` (mlir_scan/builder/function.py) is a
// subclass: a call with exact arguments runs no Python at all, and what
// Theano's conventions need (keywords, defaults, shared variables, updates)
// goes to its `fallback`.
//
//===----------------------------------------------------------------------===//

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>
#include <numpy/arrayscalars.h>

#include "ScanRuntime.h"

#include <atomic>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

extern "C" int mlirScanInvoke(void (*fn)(void **), void **args,
                              mlir_scan_runtime::CallError *error);
extern "C" int mlirScanInvokeSlot(const mlir::scan::EntrySlot *slot,
                                  void **args,
                                  mlir_scan_runtime::CallError *error);
extern "C" void mlirScanFree(void *pointer);

namespace {

/// Descriptors of rank up to this are built on the stack.
constexpr int kMaxRank = 16;
/// More arguments or results than this take the heap.
constexpr int kStackSlots = 32;

/// One argument or result of the signature.
struct Slot {
  bool tensor = false;
  int typenum = NPY_NOTYPE; // NumPy type of the element (or scalar)
  int rank = 0;
  int64_t staticDims[kMaxRank]; // -1: dynamic
  int64_t itemsize = 0;
  int64_t resultOffset = 0; // results: byte offset in the result struct
};

struct FunctionObject {
  PyObject_HEAD
  void (*packed)(void **);
  // Where the JIT keeps the current address of `packed` (its tiers,
  // python/capi/ScanJIT.cpp), or null: calls then go through the slot.
  const mlir::scan::EntrySlot *entrySlot;
  std::vector<Slot> *args;
  std::vector<Slot> *results;
  int64_t resultBytes;     // size of the C-interface result struct
  bool resultStruct;       // results returned through a struct pointer
  PyObject *coerce;        // coerce(i, value) -> array or scalar
  PyObject *raiseError;    // raise_error(kind, code, item, have, need, msg)
  // The graph builder's functions (mlir_scan/builder/function.py) keep
  // Theano's calling conventions: keywords, defaults, shared variables and
  // updates go through `fallback(*args, **kwargs)` (every call when
  // `fallbackOnly`); a Python float is not an exact float32; results come
  // as a list (`resultList`) and scalars as 0-d arrays (`scalarArrays`).
  PyObject *fallback;
  bool fallbackOnly;
  bool float32FromPython;
  bool resultList;
  bool scalarArrays;
  PyObject *weakrefs;
  PyObject *dict;
};

/// The descriptor of a ranked memref: allocated, aligned, offset, sizes[r],
/// strides[r] (the layout the LLVM lowering uses).
struct Descriptor {
  void *allocated;
  void *aligned;
  int64_t offset;
  int64_t sizesAndStrides[2 * kMaxRank];
};

//===----------------------------------------------------------------------===//
// Arguments
//===----------------------------------------------------------------------===//

/// An array this call can pass as is (else the Python side converts it).
bool usableArray(PyObject *value, const Slot &slot) {
  if (!PyArray_CheckExact(value))
    return false;
  auto *array = reinterpret_cast<PyArrayObject *>(value);
  if (PyArray_TYPE(array) != slot.typenum || PyArray_NDIM(array) != slot.rank ||
      !PyArray_IS_C_CONTIGUOUS(array) || !PyArray_ISALIGNED(array) ||
      PyArray_DESCR(array)->byteorder == '>')
    return false;
  npy_intp *dims = PyArray_DIMS(array);
  for (int d = 0; d < slot.rank; ++d)
    if (slot.staticDims[d] >= 0 && dims[d] != slot.staticDims[d])
      return false;
  return true;
}

void fillDescriptor(Descriptor &desc, PyArrayObject *array, int rank) {
  void *data = PyArray_DATA(array);
  desc.allocated = data;
  desc.aligned = data;
  desc.offset = 0;
  npy_intp *dims = PyArray_DIMS(array);
  int64_t stride = 1;
  for (int d = rank - 1; d >= 0; --d) {
    desc.sizesAndStrides[d] = dims[d];
    desc.sizesAndStrides[rank + d] = stride;
    stride *= dims[d] > 0 ? dims[d] : 1;
  }
}

/// Stores the scalar `value` as the C value of `slot`'s type; false when it
/// is not an exact, in-range scalar of that kind (the Python side decides).
bool packScalar(PyObject *value, const Slot &slot, void *out,
                bool float32FromPython) {
  switch (slot.typenum) {
  case NPY_FLOAT64:
    if (PyFloat_CheckExact(value)) {
      *static_cast<double *>(out) = PyFloat_AS_DOUBLE(value);
      return true;
    }
    if (PyArray_IsScalar(value, Double)) {
      *static_cast<double *>(out) = PyArrayScalar_VAL(value, Double);
      return true;
    }
    return false;
  case NPY_FLOAT32:
    if (float32FromPython && PyFloat_CheckExact(value)) {
      *static_cast<float *>(out) = static_cast<float>(PyFloat_AS_DOUBLE(value));
      return true;
    }
    if (PyArray_IsScalar(value, Float)) {
      *static_cast<float *>(out) = PyArrayScalar_VAL(value, Float);
      return true;
    }
    return false;
  case NPY_BOOL:
    if (PyBool_Check(value)) {
      *static_cast<bool *>(out) = value == Py_True;
      return true;
    }
    if (PyArray_IsScalar(value, Bool)) {
      *static_cast<bool *>(out) = PyArrayScalar_VAL(value, Bool) != 0;
      return true;
    }
    return false;
  case NPY_INT8:
  case NPY_INT16:
  case NPY_INT32:
  case NPY_INT64: {
    if (!PyLong_CheckExact(value))
      return false; // NumPy integers and bools: the Python side
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(value, &overflow);
    if (overflow || (v == -1 && PyErr_Occurred())) {
      PyErr_Clear();
      return false;
    }
    int64_t bits = 8 * slot.itemsize;
    if (bits < 64) {
      long long lo = -(1LL << (bits - 1)), hi = (1LL << (bits - 1)) - 1;
      if (v < lo || v > hi)
        return false;
    }
    switch (slot.typenum) {
    case NPY_INT8:
      *static_cast<int8_t *>(out) = static_cast<int8_t>(v);
      break;
    case NPY_INT16:
      *static_cast<int16_t *>(out) = static_cast<int16_t>(v);
      break;
    case NPY_INT32:
      *static_cast<int32_t *>(out) = static_cast<int32_t>(v);
      break;
    default:
      *static_cast<int64_t *>(out) = v;
    }
    return true;
  }
  default:
    return false;
  }
}

//===----------------------------------------------------------------------===//
// Results
//===----------------------------------------------------------------------===//

void freeAllocation(PyObject *capsule) {
  void *pointer = PyCapsule_GetPointer(capsule, "mlir_scan.allocation");
  if (pointer)
    mlirScanFree(pointer);
}

/// An ndarray over a returned buffer that owns it (freed, by the runtime's
/// allocator, when the last array using it dies).
PyObject *arrayFromDescriptor(const char *raw, const Slot &slot) {
  Descriptor desc;
  std::memcpy(&desc, raw, 3 * sizeof(int64_t) + 2 * slot.rank * sizeof(int64_t));
  npy_intp dims[kMaxRank], strides[kMaxRank];
  int64_t count = 1;
  for (int d = 0; d < slot.rank; ++d) {
    dims[d] = desc.sizesAndStrides[d];
    strides[d] = desc.sizesAndStrides[slot.rank + d] * slot.itemsize;
    count *= dims[d];
  }
  PyArray_Descr *descr = PyArray_DescrFromType(slot.typenum);
  if (count == 0) {
    if (desc.allocated)
      mlirScanFree(desc.allocated);
    return PyArray_Empty(slot.rank, dims, descr, 0);
  }
  char *data = static_cast<char *>(desc.aligned) + desc.offset * slot.itemsize;
  PyObject *array = PyArray_NewFromDescr(&PyArray_Type, descr, slot.rank, dims,
                                         strides, data, NPY_ARRAY_WRITEABLE,
                                         nullptr);
  if (!array) {
    mlirScanFree(desc.allocated);
    return nullptr;
  }
  if (!desc.allocated)
    return array;
  PyObject *owner =
      PyCapsule_New(desc.allocated, "mlir_scan.allocation", freeAllocation);
  if (!owner) {
    mlirScanFree(desc.allocated);
    Py_DECREF(array);
    return nullptr;
  }
  if (PyArray_SetBaseObject(reinterpret_cast<PyArrayObject *>(array), owner) <
      0) {
    Py_DECREF(array); // the capsule was stolen: freed with it
    return nullptr;
  }
  return array;
}

/// Replaces the pending ValueError of NumPy ("array is too big") by one
/// that names result `index` and its shape.
void raiseUnrepresentable(size_t index, const char *raw, const Slot &slot) {
  Descriptor desc;
  std::memcpy(&desc, raw, 3 * sizeof(int64_t) + slot.rank * sizeof(int64_t));
  std::string shape;
  for (int d = 0; d < slot.rank; ++d)
    shape += (d ? ", " : "") + std::to_string(desc.sizesAndStrides[d]);
  PyErr_Clear();
  PyErr_Format(PyExc_ValueError,
               "result #%zu has shape (%s), which a NumPy array cannot have "
               "(the product of its sizes does not fit in 64 bits)",
               index, shape.c_str());
}

/// Frees what the results hold when they cannot all be returned.
void freeResults(const char *raw, const std::vector<Slot> &results,
                 size_t from) {
  for (size_t i = from; i < results.size(); ++i)
    if (results[i].tensor) {
      void *allocated;
      std::memcpy(&allocated, raw + results[i].resultOffset, sizeof(void *));
      if (allocated)
        mlirScanFree(allocated);
    }
}

//===----------------------------------------------------------------------===//
// The call
//===----------------------------------------------------------------------===//

PyObject *callFunction(PyObject *self, PyObject *args, PyObject *kwargs) {
  auto *fn = reinterpret_cast<FunctionObject *>(self);
  const std::vector<Slot> &argSlots = *fn->args;
  const std::vector<Slot> &resultSlots = *fn->results;
  Py_ssize_t nargs = PyTuple_GET_SIZE(args);
  bool keywords = kwargs && PyDict_GET_SIZE(kwargs);
  if (fn->fallback &&
      (fn->fallbackOnly || keywords ||
       nargs != static_cast<Py_ssize_t>(argSlots.size())))
    return PyObject_Call(fn->fallback, args, kwargs);
  if (keywords) {
    PyErr_SetString(PyExc_TypeError,
                    "compiled functions take positional arguments only");
    return nullptr;
  }
  if (!fn->packed && !fn->entrySlot) {
    // Bound on first use (a program whose engine is created lazily, e.g. for
    // a GPU): `_bind` binds or raises why it cannot.
    PyObject *bound = PyObject_CallMethod(self, "_bind", nullptr);
    if (!bound)
      return nullptr;
    Py_DECREF(bound);
    if (!fn->packed && !fn->entrySlot) {
      PyErr_SetString(PyExc_RuntimeError, "mlir_scan: the function could not be bound");
      return nullptr;
    }
  }
  if (nargs != static_cast<Py_ssize_t>(argSlots.size())) {
    PyErr_Format(PyExc_TypeError, "%S takes %zd arguments, got %zd", self,
                 static_cast<Py_ssize_t>(argSlots.size()), nargs);
    return nullptr;
  }

  // Storage: per argument a descriptor (tensors) or a value, and the
  // pointer the packed slot points at.
  size_t n = argSlots.size();
  std::vector<Descriptor> heapDescs;
  Descriptor stackDescs[4];
  Descriptor *descs = stackDescs;
  size_t tensors = 0;
  for (const Slot &s : argSlots)
    tensors += s.tensor;
  if (tensors > 4) {
    heapDescs.resize(tensors);
    descs = heapDescs.data();
  }
  int64_t stackValues[kStackSlots];
  void *stackPointers[kStackSlots];
  void *stackPacked[kStackSlots + 2];
  std::vector<int64_t> heapValues;
  std::vector<void *> heapPointers, heapPacked;
  int64_t *values = stackValues;
  void **pointers = stackPointers;
  void **packed = stackPacked;
  if (n > kStackSlots) {
    heapValues.resize(n);
    heapPointers.resize(n);
    heapPacked.resize(n + 2);
    values = heapValues.data();
    pointers = heapPointers.data();
    packed = heapPacked.data();
  }
  // Converted arguments (kept alive until the call returns).
  PyObject *converted[kStackSlots];
  std::vector<PyObject *> heapConverted;
  PyObject **keep = converted;
  if (n > kStackSlots) {
    heapConverted.assign(n, nullptr);
    keep = heapConverted.data();
  } else {
    for (size_t i = 0; i < n; ++i)
      converted[i] = nullptr;
  }
  auto release = [&] {
    for (size_t i = 0; i < n; ++i)
      Py_XDECREF(keep[i]);
  };

  std::vector<char> heapResult;
  alignas(16) char stackResult[1024];
  char *result = stackResult;
  if (fn->resultBytes > static_cast<int64_t>(sizeof(stackResult))) {
    heapResult.resize(fn->resultBytes + 16);
    result = heapResult.data();
  }
  void *resultPointer = result;
  size_t first = 0;
  if (fn->resultStruct) {
    packed[0] = &resultPointer;
    first = 1;
  }

  size_t d = 0;
  for (size_t i = 0; i < n; ++i) {
    const Slot &slot = argSlots[i];
    PyObject *value = PyTuple_GET_ITEM(args, i);
    if (slot.tensor) {
      if (!usableArray(value, slot)) {
        PyObject *index = PyLong_FromSsize_t(static_cast<Py_ssize_t>(i));
        PyObject *array = index ? PyObject_CallFunctionObjArgs(
                                      fn->coerce, index, value, nullptr)
                                : nullptr;
        Py_XDECREF(index);
        if (!array) {
          release();
          return nullptr;
        }
        keep[i] = array;
        if (!usableArray(array, slot)) {
          release();
          PyErr_Format(PyExc_SystemError,
                       "mlir_scan: argument #%zd was converted to an "
                       "unusable array",
                       static_cast<Py_ssize_t>(i));
          return nullptr;
        }
        value = array;
      }
      fillDescriptor(descs[d], reinterpret_cast<PyArrayObject *>(value),
                     slot.rank);
      pointers[i] = &descs[d++];
      packed[first + i] = &pointers[i];
      continue;
    }
    if (!packScalar(value, slot, &values[i], fn->float32FromPython)) {
      PyObject *index = PyLong_FromSsize_t(static_cast<Py_ssize_t>(i));
      PyObject *scalar = index ? PyObject_CallFunctionObjArgs(
                                     fn->coerce, index, value, nullptr)
                               : nullptr;
      Py_XDECREF(index);
      if (!scalar) {
        release();
        return nullptr;
      }
      keep[i] = scalar;
      if (!packScalar(scalar, slot, &values[i], fn->float32FromPython)) {
        release();
        if (!PyErr_Occurred())
          PyErr_Format(PyExc_SystemError,
                       "mlir_scan: argument #%zd was converted to an "
                       "unusable scalar",
                       static_cast<Py_ssize_t>(i));
        return nullptr;
      }
    }
    packed[first + i] = &values[i];
  }
  if (!fn->resultStruct && !resultSlots.empty())
    packed[first + n] = result; // a single scalar result

  mlir_scan_runtime::CallError error;
  int failed;
  Py_BEGIN_ALLOW_THREADS
  failed = fn->entrySlot ? mlirScanInvokeSlot(fn->entrySlot, packed, &error)
                         : mlirScanInvoke(fn->packed, packed, &error);
  Py_END_ALLOW_THREADS
  release();

  if (failed) {
    PyObject *exc = PyObject_CallFunction(
        fn->raiseError, "LLLLLy", static_cast<long long>(error.kind),
        static_cast<long long>(error.code), static_cast<long long>(error.item),
        static_cast<long long>(error.have), static_cast<long long>(error.need),
        error.message);
    if (exc) {
      PyErr_SetObject(reinterpret_cast<PyObject *>(Py_TYPE(exc)), exc);
      Py_DECREF(exc);
    }
    return nullptr;
  }

  size_t count = resultSlots.size();
  if (count == 0)
    return fn->resultList ? PyList_New(0) : Py_NewRef(Py_None);
  bool many = count > 1 || fn->resultList;
  PyObject *tuple = !many          ? nullptr
                    : fn->resultList ? PyList_New(count)
                                     : PyTuple_New(count);
  if (many && !tuple) {
    freeResults(result, resultSlots, 0);
    return nullptr;
  }
  for (size_t i = 0; i < count; ++i) {
    const Slot &slot = resultSlots[i];
    const char *raw = result + slot.resultOffset;
    PyObject *item;
    if (slot.tensor) {
      item = arrayFromDescriptor(raw, slot);
      if (!item && PyErr_ExceptionMatches(PyExc_ValueError))
        // A shape NumPy cannot represent, such as (2**62, 0): its element
        // count fits, the product of its sizes does not.
        raiseUnrepresentable(i, raw, slot);
    } else if (fn->scalarArrays) {
      item = PyArray_SimpleNew(0, nullptr, slot.typenum);
      if (item)
        std::memcpy(PyArray_DATA(reinterpret_cast<PyArrayObject *>(item)), raw,
                    slot.itemsize);
    } else {
      PyArray_Descr *descr = PyArray_DescrFromType(slot.typenum);
      item = PyArray_Scalar(const_cast<char *>(raw), descr, nullptr);
      Py_DECREF(descr);
    }
    if (!item) {
      freeResults(result, resultSlots, i + 1);
      Py_XDECREF(tuple);
      return nullptr;
    }
    if (!many)
      return item;
    if (fn->resultList)
      PyList_SET_ITEM(tuple, i, item);
    else
      PyTuple_SET_ITEM(tuple, i, item);
  }
  return tuple;
}

//===----------------------------------------------------------------------===//
// The type
//===----------------------------------------------------------------------===//

bool parseSlots(PyObject *specs, std::vector<Slot> &out) {
  PyObject *seq = PySequence_Fast(specs, "signature must be a sequence");
  if (!seq)
    return false;
  Py_ssize_t count = PySequence_Fast_GET_SIZE(seq);
  for (Py_ssize_t i = 0; i < count; ++i) {
    PyObject *spec = PySequence_Fast_GET_ITEM(seq, i);
    // (tensor, typenum, static dims (-1: dynamic), byte offset in the
    // result struct)
    int tensor, typenum;
    long long offset = 0;
    PyObject *dims;
    if (!PyArg_ParseTuple(spec, "piOL", &tensor, &typenum, &dims, &offset)) {
      Py_DECREF(seq);
      return false;
    }
    Slot slot;
    slot.tensor = tensor;
    slot.typenum = typenum;
    slot.resultOffset = offset;
    PyArray_Descr *descr = PyArray_DescrFromType(typenum);
    if (!descr) {
      Py_DECREF(seq);
      return false;
    }
    slot.itemsize = PyDataType_ELSIZE(descr);
    Py_DECREF(descr);
    PyObject *dimSeq = PySequence_Fast(dims, "static dims must be a sequence");
    if (!dimSeq) {
      Py_DECREF(seq);
      return false;
    }
    slot.rank = static_cast<int>(PySequence_Fast_GET_SIZE(dimSeq));
    if (slot.rank > kMaxRank) {
      Py_DECREF(dimSeq);
      Py_DECREF(seq);
      PyErr_Format(PyExc_ValueError, "rank %d is above %d", slot.rank,
                   kMaxRank);
      return false;
    }
    for (int d = 0; d < slot.rank; ++d)
      slot.staticDims[d] =
          PyLong_AsLongLong(PySequence_Fast_GET_ITEM(dimSeq, d));
    Py_DECREF(dimSeq);
    if (PyErr_Occurred()) {
      Py_DECREF(seq);
      return false;
    }
    out.push_back(slot);
  }
  Py_DECREF(seq);
  return true;
}

int functionInit(PyObject *self, PyObject *args, PyObject *kwargs) {
  auto *fn = reinterpret_cast<FunctionObject *>(self);
  unsigned long long address, entrySlot = 0;
  PyObject *argSpecs, *resultSpecs, *coerce, *raiseError;
  PyObject *fallback = Py_None;
  long long resultBytes;
  int resultStruct, float32FromPython = 1, resultList = 0, scalarArrays = 0;
  static const char *keywords[] = {"entry",          "args",
                                   "results",        "result_bytes",
                                   "result_struct",  "coerce",
                                   "raise_error",    "fallback",
                                   "float32_from_python", "result_list",
                                   "scalar_arrays",  "entry_slot",
                                   nullptr};
  if (!PyArg_ParseTupleAndKeywords(
          args, kwargs, "KOOLpOO|$OpppK", const_cast<char **>(keywords),
          &address, &argSpecs, &resultSpecs, &resultBytes, &resultStruct,
          &coerce, &raiseError, &fallback, &float32FromPython, &resultList,
          &scalarArrays, &entrySlot))
    return -1;
  if (!address && !entrySlot) { // (a slot holds 0 while its code compiles)
    PyErr_SetString(PyExc_ValueError, "null entry point");
    return -1;
  }
  fn->packed = reinterpret_cast<void (*)(void **)>(address);
  fn->entrySlot = reinterpret_cast<const mlir::scan::EntrySlot *>(entrySlot);
  fn->args->clear();
  fn->results->clear();
  if (!parseSlots(argSpecs, *fn->args) || !parseSlots(resultSpecs, *fn->results))
    return -1;
  fn->resultBytes = resultBytes;
  fn->resultStruct = resultStruct;
  Py_XSETREF(fn->coerce, Py_NewRef(coerce));
  Py_XSETREF(fn->raiseError, Py_NewRef(raiseError));
  Py_XSETREF(fn->fallback, fallback == Py_None ? nullptr : Py_NewRef(fallback));
  fn->fallbackOnly = false;
  fn->float32FromPython = float32FromPython;
  fn->resultList = resultList;
  fn->scalarArrays = scalarArrays;
  return 0;
}

/// `_fallback_only(fallback)`: every call goes to `fallback` (a builder
/// function with shared variables or updates, or not compiled for the CPU).
PyObject *functionFallbackOnly(PyObject *self, PyObject *fallback) {
  auto *fn = reinterpret_cast<FunctionObject *>(self);
  Py_XSETREF(fn->fallback, Py_NewRef(fallback));
  fn->fallbackOnly = true;
  Py_RETURN_NONE;
}

PyMethodDef functionMethods[] = {
    {"_fallback_only", functionFallbackOnly, METH_O,
     "Send every call to `fallback(*args, **kwargs)`."},
    {nullptr, nullptr, 0, nullptr}};

PyObject *functionNew(PyTypeObject *type, PyObject *, PyObject *) {
  auto *fn = reinterpret_cast<FunctionObject *>(type->tp_alloc(type, 0));
  if (!fn)
    return nullptr;
  fn->args = new std::vector<Slot>();
  fn->results = new std::vector<Slot>();
  fn->float32FromPython = true;
  return reinterpret_cast<PyObject *>(fn);
}

int functionTraverse(PyObject *self, visitproc visit, void *arg) {
  auto *fn = reinterpret_cast<FunctionObject *>(self);
  Py_VISIT(Py_TYPE(self));
  Py_VISIT(fn->coerce);
  Py_VISIT(fn->raiseError);
  Py_VISIT(fn->fallback);
  Py_VISIT(fn->dict);
  return 0;
}

int functionClear(PyObject *self) {
  auto *fn = reinterpret_cast<FunctionObject *>(self);
  Py_CLEAR(fn->coerce);
  Py_CLEAR(fn->raiseError);
  Py_CLEAR(fn->fallback);
  Py_CLEAR(fn->dict);
  return 0;
}

void functionDealloc(PyObject *self) {
  auto *fn = reinterpret_cast<FunctionObject *>(self);
  PyObject_GC_UnTrack(self);
  if (fn->weakrefs)
    PyObject_ClearWeakRefs(self);
  functionClear(self);
  delete fn->args;
  delete fn->results;
  PyTypeObject *type = Py_TYPE(self);
  type->tp_free(self);
  Py_DECREF(type);
}

PyMemberDef functionMembers[] = {
    {"__weaklistoffset__", T_PYSSIZET, offsetof(FunctionObject, weakrefs),
     READONLY, nullptr},
    {"__dictoffset__", T_PYSSIZET, offsetof(FunctionObject, dict), READONLY,
     nullptr},
    {nullptr, 0, 0, 0, nullptr}};

PyGetSetDef functionGetSet[] = {
    {"__dict__", PyObject_GenericGetDict, PyObject_GenericSetDict, nullptr,
     nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr}};

PyType_Slot functionSlots[] = {
    {Py_tp_doc, const_cast<char *>(
                    "Function(entry, args, results, result_bytes, "
                    "result_struct, coerce, raise_error, *, fallback=None, "
                    "float32_from_python=True, result_list=False, "
                    "scalar_arrays=False, entry_slot=0): the native call "
                    "path of one "
                    "compiled function (see mlir_scan.runtime and "
                    "mlir_scan.builder.function).")},
    {Py_tp_new, reinterpret_cast<void *>(functionNew)},
    {Py_tp_init, reinterpret_cast<void *>(functionInit)},
    {Py_tp_call, reinterpret_cast<void *>(callFunction)},
    {Py_tp_traverse, reinterpret_cast<void *>(functionTraverse)},
    {Py_tp_clear, reinterpret_cast<void *>(functionClear)},
    {Py_tp_dealloc, reinterpret_cast<void *>(functionDealloc)},
    {Py_tp_members, functionMembers},
    {Py_tp_methods, functionMethods},
    {Py_tp_getset, functionGetSet},
    {0, nullptr}};

PyType_Spec functionSpec = {
    "mlir_scan._native.Function", sizeof(FunctionObject), 0,
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    functionSlots};

int moduleExec(PyObject *module) {
  if (PyArray_ImportNumPyAPI() < 0)
    return -1;
  PyObject *type = PyType_FromModuleAndSpec(module, &functionSpec, nullptr);
  if (!type)
    return -1;
  int rc = PyModule_AddObjectRef(module, "Function", type);
  Py_DECREF(type);
  return rc;
}

PyModuleDef_Slot moduleSlots[] = {{Py_mod_exec, reinterpret_cast<void *>(moduleExec)},
                                  {0, nullptr}};

PyModuleDef moduleDef = {PyModuleDef_HEAD_INIT,
                         "_native",
                         "The native call path of compiled mlir-scan functions.",
                         0,
                         nullptr,
                         moduleSlots,
                         nullptr,
                         nullptr,
                         nullptr};

} // namespace

PyMODINIT_FUNC PyInit__native() { return PyModuleDef_Init(&moduleDef); }
