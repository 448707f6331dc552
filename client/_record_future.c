/* The storage of the producer's record futures, as C types outside the cyclic garbage collector.
 *
 * A RecordFuture is one record's view of its batch: (batch, index, timestamp). A producer burst
 * keeps one alive per unacknowledged record, and a user's list of a million of them is the
 * common idiom (send N, then gather). As Python objects with __slots__ they are tracked by the
 * cyclic collector, and each of its full passes walks all of them: that was the largest single
 * cost of the idiom. These types do not set Py_TPFLAGS_HAVE_GC, so the collector never sees
 * them; reference counting still frees them. (A Python subclass would not do: every class
 * statement makes a GC type.)
 *
 * Import them from client.record_future, which picks this module or its pure-Python twin
 * (client/_record_future_py.py) once; client/_record_future.pyi is the interface of both.
 *
 * Methods. The types define every method of the interface themselves, so nothing is added to
 * them from Python. result(), exception(), done(), cancelled() and get_loop() are answered here
 * for their common case (and the _asyncio_future_blocking attribute, which makes asyncio.isfuture
 * true); everything else -- those methods' other cases, add_done_callback, remove_done_callback,
 * cancel, _make_cancelled_error, __await__/__iter__ and __repr__ -- calls the method of the same
 * name of the pure-Python RecordFuture class handed to configure() (plain functions: they take
 * any object with _batch, _index and _timestamp). One implementation of each, whichever storage
 * the record future has; a method called before configure() raises RuntimeError.
 *
 * The price: a reference cycle that runs through one of these objects cannot be collected.
 * Those Python methods keep them out of cycles: the callbacks a batch holds for its records
 * are dropped when they have run, and the error a record future raises is a fresh copy each
 * time, so the traceback that collects the caller's frames never hangs off the batch. The
 * types hold only the batch (or its stand-in), ints, a float, and a waiting record's key,
 * value, headers and partition until the record is appended to a batch.
 *
 * RecordFuture(batch, index, timestamp)
 *   _batch      object   the ProducerBatch, WaitGroup or FailedRecords (assignable)
 *   _index      int      the record's index in the batch (assignable)
 *   _timestamp  int      the record's CreateTime in ms
 * WaitingRecord(group, topic, value, key, headers, partition, timestamp, deadline): a
 * RecordFuture with index 0 that also carries the record while it waits for metadata or
 * memory: topic, value, key, headers, partition (objects, None when cleared) and deadline
 * (float, the loop time at which it fails).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

typedef struct {
    PyObject_HEAD
    PyObject *batch;
    Py_ssize_t index;
    long long timestamp;
} RecordFutureObject;

typedef struct {
    RecordFutureObject base;
    PyObject *topic;
    PyObject *value;
    PyObject *key;
    PyObject *headers;
    PyObject *partition;
    double deadline;
} WaitingRecordObject;

/* The types (set by module_exec; the module keeps them alive): for place_run's exact-type test
 * and for the new_* constructors. */
static PyTypeObject *waiting_record_type = NULL;
static PyTypeObject *record_future_type = NULL;

static PyObject *
make_record_future(PyTypeObject *type, PyObject *batch, Py_ssize_t index, long long timestamp)
{
    RecordFutureObject *self = (RecordFutureObject *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    self->batch = Py_NewRef(batch);
    self->index = index;
    self->timestamp = timestamp;
    return (PyObject *)self;
}

static PyObject *
make_waiting_record(PyTypeObject *type, PyObject *group, PyObject *topic, PyObject *value, PyObject *key,
                    PyObject *headers, PyObject *partition, long long timestamp, double deadline)
{
    WaitingRecordObject *self = (WaitingRecordObject *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    self->base.batch = Py_NewRef(group);
    self->base.index = 0;
    self->base.timestamp = timestamp;
    self->topic = Py_NewRef(topic);
    self->value = Py_NewRef(value);
    self->key = Py_NewRef(key);
    self->headers = Py_NewRef(headers);
    self->partition = Py_NewRef(partition);
    self->deadline = deadline;
    return (PyObject *)self;
}

static PyObject *
record_future_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    PyObject *batch;
    Py_ssize_t index;
    long long timestamp;
    if (kwds != NULL && PyDict_GET_SIZE(kwds) != 0) {
        PyErr_SetString(PyExc_TypeError, "RecordFuture() takes no keyword arguments");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "OnL:RecordFuture", &batch, &index, &timestamp))
        return NULL;
    return make_record_future(type, batch, index, timestamp);
}

static void
record_future_dealloc(RecordFutureObject *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    Py_CLEAR(self->batch);
    tp->tp_free((PyObject *)self);
    Py_DECREF(tp);
}

static PyObject *
waiting_record_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    PyObject *group, *topic, *value, *key, *headers, *partition;
    long long timestamp;
    double deadline;
    if (kwds != NULL && PyDict_GET_SIZE(kwds) != 0) {
        PyErr_SetString(PyExc_TypeError, "WaitingRecord() takes no keyword arguments");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "OOOOOOLd:WaitingRecord", &group, &topic, &value, &key, &headers, &partition,
                          &timestamp, &deadline))
        return NULL;
    return make_waiting_record(type, group, topic, value, key, headers, partition, timestamp, deadline);
}

static void
waiting_record_dealloc(WaitingRecordObject *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    Py_CLEAR(self->base.batch);
    Py_CLEAR(self->topic);
    Py_CLEAR(self->value);
    Py_CLEAR(self->key);
    Py_CLEAR(self->headers);
    Py_CLEAR(self->partition);
    tp->tp_free((PyObject *)self);
    Py_DECREF(tp);
}

/* Set by configure(): the ProducerBatch and RecordMetadata classes, and the functions of the
 * pure-Python RecordFuture the methods below delegate to (strong references). */
static PyTypeObject *producer_batch_type = NULL;
static PyTypeObject *record_metadata_type = NULL;
enum { PY_RESULT, PY_EXCEPTION, PY_ADD_DONE_CALLBACK, PY_REMOVE_DONE_CALLBACK, PY_CANCEL,
       PY_MAKE_CANCELLED_ERROR, PY_AWAIT, PY_REPR, N_PY_METHODS };
static const char *py_method_names[N_PY_METHODS] = {
    "result", "exception", "add_done_callback", "remove_done_callback", "cancel", "_make_cancelled_error",
    "__await__", "__repr__",
};
static PyObject *py_methods[N_PY_METHODS];
static PyObject *str_future, *str_results, *str_topic, *str_partition, *str_result, *str_exception,
    *str_done, *str_cancelled, *str_get_loop;

/* py_methods[which](self, *args, **kwargs) */
static PyObject *
delegate(int which, PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *fn = py_methods[which];
    if (fn == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "client._record_future.configure() was not called");
        return NULL;
    }
    Py_ssize_t total = nargs + (kwnames != NULL ? PyTuple_GET_SIZE(kwnames) : 0);
    PyObject *small[8];
    PyObject **stack = small;
    if (total + 1 > 8) {
        stack = PyMem_Malloc((size_t)(total + 1) * sizeof(PyObject *));
        if (stack == NULL)
            return PyErr_NoMemory();
    }
    stack[0] = self;
    for (Py_ssize_t i = 0; i < total; i++)
        stack[i + 1] = args[i];
    PyObject *out = PyObject_Vectorcall(fn, stack, (size_t)nargs + 1, kwnames);
    if (stack != small)
        PyMem_Free(stack);
    return out;
}

/* cls(topic, partition, offset, timestamp) for a tuple subclass ``cls``, built in place (as
 * tuple.__new__ does) and untracked when every field is an exact str or int. */
static PyObject *
make_metadata(PyTypeObject *cls, PyObject *topic, PyObject *partition, PyObject *offset, PyObject *timestamp)
{
    PyObject *items[4] = {topic, partition, offset, timestamp};
    PyObject *out = cls->tp_alloc(cls, 4);
    if (out == NULL)
        return NULL;
    int atomic = 1;
    for (Py_ssize_t i = 0; i < 4; i++) {
        if (!(PyUnicode_CheckExact(items[i]) || PyLong_CheckExact(items[i])))
            atomic = 0;
        PyTuple_SET_ITEM(out, i, Py_NewRef(items[i]));
    }
    if (atomic && PyObject_GC_IsTracked(out))
        PyObject_GC_UnTrack(out);
    return out;
}

/* The fast path of RecordFuture.result(): the record's batch is a ProducerBatch answered as a
 * whole (no split) with a (base_offset, log_append_time) result. Anything else — a batch still
 * pending or failed, a split batch, a WaitGroup or FailedRecords — is the Python method's,
 * which raises a fresh copy of the error. */
static PyObject *rf_result_batch(RecordFutureObject *self, PyObject *b);

/* The methods below hold a strong reference to the batch while they work: another thread (a
 * SyncProducer's caller reading a result) may run while they call into Python, and the loop
 * thread may re-point ``_batch`` meanwhile. */
static PyObject *
rf_result(RecordFutureObject *self, PyObject *unused)
{
    PyObject *b = Py_XNewRef(self->batch);
    PyObject *out = rf_result_batch(self, b);
    Py_XDECREF(b);
    return out;
}

static PyObject *
rf_result_batch(RecordFutureObject *self, PyObject *b)
{
    if (b != NULL && Py_TYPE(b) == producer_batch_type && record_metadata_type != NULL) {
        PyObject *results = PyObject_GetAttr(b, str_results);
        if (results == NULL)
            return NULL;
        int whole = results == Py_None;
        Py_DECREF(results);
        PyObject *f = whole ? PyObject_GetAttr(b, str_future) : NULL;
        PyObject *done = f != NULL ? PyObject_CallMethodNoArgs(f, str_done) : NULL;
        if (done == Py_True) {
            PyObject *exc = PyObject_CallMethodNoArgs(f, str_exception); /* a cancelled batch raises: slow path */
            PyObject *r = exc == Py_None ? PyObject_CallMethodNoArgs(f, str_result) : NULL;
            Py_XDECREF(exc);
            if (r != NULL && PyTuple_Check(r) && PyTuple_GET_SIZE(r) == 2) {
                long long base = PyLong_AsLongLong(PyTuple_GET_ITEM(r, 0));
                long long lat = PyLong_AsLongLong(PyTuple_GET_ITEM(r, 1));
                Py_DECREF(r);
                Py_DECREF(done);
                Py_DECREF(f);
                if ((base == -1 || lat == -1) && PyErr_Occurred())
                    return NULL;
                PyObject *topic = PyObject_GetAttr(b, str_topic);
                PyObject *partition = topic != NULL ? PyObject_GetAttr(b, str_partition) : NULL;
                PyObject *offset = PyLong_FromLongLong(base >= 0 ? base + (long long)self->index : -1);
                PyObject *ts = PyLong_FromLongLong(lat >= 0 ? lat : self->timestamp);
                PyObject *md = NULL;
                if (topic != NULL && partition != NULL && offset != NULL && ts != NULL)
                    md = make_metadata(record_metadata_type, topic, partition, offset, ts);
                Py_XDECREF(topic);
                Py_XDECREF(partition);
                Py_XDECREF(offset);
                Py_XDECREF(ts);
                return md;
            }
            Py_XDECREF(r);
        }
        Py_XDECREF(done);
        Py_XDECREF(f);
        PyErr_Clear(); /* whatever failed above, the Python method decides */
    }
    return delegate(PY_RESULT, (PyObject *)self, NULL, 0, NULL);
}

/* exception(): None for a ProducerBatch answered as a whole without error; else the Python
 * method (a fresh copy of the error, or InvalidStateError while pending). */
static PyObject *
rf_exception(RecordFutureObject *self, PyObject *unused)
{
    PyObject *b = Py_XNewRef(self->batch);
    if (b != NULL && Py_TYPE(b) == producer_batch_type) {
        PyObject *results = PyObject_GetAttr(b, str_results);
        int whole = results == Py_None;
        Py_XDECREF(results);
        PyObject *f = whole ? PyObject_GetAttr(b, str_future) : NULL;
        if (f != NULL) {
            PyObject *exc = PyObject_CallMethodNoArgs(f, str_exception);
            Py_DECREF(f);
            if (exc == Py_None) {
                Py_DECREF(b);
                return exc;
            }
            Py_XDECREF(exc);
        }
        PyErr_Clear(); /* the Python method decides */
    }
    Py_XDECREF(b);
    return delegate(PY_EXCEPTION, (PyObject *)self, NULL, 0, NULL);
}

/* done() / cancelled(): those of the batch's (or its stand-in's) future. */
static PyObject *
rf_future_call(RecordFutureObject *self, PyObject *name)
{
    PyObject *b = Py_XNewRef(self->batch);
    if (b == NULL) {
        PyErr_SetString(PyExc_AttributeError, "_batch");
        return NULL;
    }
    PyObject *f = PyObject_GetAttr(b, str_future);
    Py_DECREF(b);
    if (f == NULL)
        return NULL;
    PyObject *out = PyObject_CallMethodNoArgs(f, name);
    Py_DECREF(f);
    return out;
}

static PyObject *
rf_done(RecordFutureObject *self, PyObject *unused)
{
    return rf_future_call(self, str_done);
}

static PyObject *
rf_cancelled(RecordFutureObject *self, PyObject *unused)
{
    return rf_future_call(self, str_cancelled);
}

static PyObject *
rf_get_loop(RecordFutureObject *self, PyObject *unused)
{
    return rf_future_call(self, str_get_loop);
}

static PyObject *
rf_add_done_callback(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    return delegate(PY_ADD_DONE_CALLBACK, self, args, nargs, kwnames);
}

static PyObject *
rf_remove_done_callback(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    return delegate(PY_REMOVE_DONE_CALLBACK, self, args, nargs, kwnames);
}

static PyObject *
rf_cancel(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    return delegate(PY_CANCEL, self, args, nargs, kwnames);
}

static PyObject *
rf_make_cancelled_error(PyObject *self, PyObject *unused)
{
    return delegate(PY_MAKE_CANCELLED_ERROR, self, NULL, 0, NULL);
}

/* __await__ and __iter__ (the am_await and tp_iter slots): the Python method's generator. */
static PyObject *
rf_await(PyObject *self)
{
    return delegate(PY_AWAIT, self, NULL, 0, NULL);
}

static PyObject *
rf_repr(PyObject *self)
{
    return delegate(PY_REPR, self, NULL, 0, NULL);
}

/* asyncio.isfuture(obj) is true when type(obj) has _asyncio_future_blocking and obj's is not
 * None; asyncio sets it only on futures a task's coroutine yields, which these never are. */
static PyObject *
rf_get_blocking(PyObject *self, void *closure)
{
    Py_RETURN_FALSE;
}

#define FASTCALL_KW (METH_FASTCALL | METH_KEYWORDS)

static PyMethodDef record_future_methods[] = {
    {"result", (PyCFunction)rf_result, METH_NOARGS, "The record's RecordMetadata; raises its error."},
    {"exception", (PyCFunction)rf_exception, METH_NOARGS, "The record's error (a copy), or None."},
    {"done", (PyCFunction)rf_done, METH_NOARGS, "Whether the record is answered."},
    {"cancelled", (PyCFunction)rf_cancelled, METH_NOARGS, "Whether the record's batch was cancelled."},
    {"get_loop", (PyCFunction)rf_get_loop, METH_NOARGS, "The event loop of the record's batch."},
    {"add_done_callback", (PyCFunction)(void (*)(void))rf_add_done_callback, FASTCALL_KW,
     "add_done_callback(fn, *, context=None): call fn(self) once the record is answered."},
    {"remove_done_callback", (PyCFunction)(void (*)(void))rf_remove_done_callback, FASTCALL_KW,
     "remove_done_callback(fn) -> int: remove fn's pending calls; how many."},
    {"cancel", (PyCFunction)(void (*)(void))rf_cancel, FASTCALL_KW,
     "cancel(msg=None) -> False: a record cannot be cancelled apart from its batch."},
    {"_make_cancelled_error", (PyCFunction)rf_make_cancelled_error, METH_NOARGS,
     "The CancelledError of the record's cancelled batch."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef record_future_getset[] = {
    {"_asyncio_future_blocking", rf_get_blocking, NULL, "False: asyncio.isfuture() is true.", NULL},
    {NULL},
};

static PyMemberDef record_future_members[] = {
    {"_batch", T_OBJECT_EX, offsetof(RecordFutureObject, batch), 0, NULL},
    {"_index", T_PYSSIZET, offsetof(RecordFutureObject, index), 0, NULL},
    {"_timestamp", T_LONGLONG, offsetof(RecordFutureObject, timestamp), 0, NULL},
    {NULL},
};

/* T_OBJECT reads NULL as None; the setters store None when deleted (``del rf.value``). */
static PyMemberDef waiting_record_members[] = {
    {"topic", T_OBJECT, offsetof(WaitingRecordObject, topic), 0, NULL},
    {"value", T_OBJECT, offsetof(WaitingRecordObject, value), 0, NULL},
    {"key", T_OBJECT, offsetof(WaitingRecordObject, key), 0, NULL},
    {"headers", T_OBJECT, offsetof(WaitingRecordObject, headers), 0, NULL},
    {"partition", T_OBJECT, offsetof(WaitingRecordObject, partition), 0, NULL},
    {"deadline", T_DOUBLE, offsetof(WaitingRecordObject, deadline), 0, NULL},
    {NULL},
};

static PyType_Slot record_future_slots[] = {
    {Py_tp_new, record_future_new},
    {Py_tp_dealloc, record_future_dealloc},
    {Py_tp_members, record_future_members},
    {Py_tp_methods, record_future_methods},
    {Py_tp_getset, record_future_getset},
    {Py_am_await, rf_await},
    {Py_tp_iter, rf_await},
    {Py_tp_repr, rf_repr},
    {Py_tp_doc, "RecordFuture(batch, index, timestamp): the future of one record of a batch "
                "(client/_record_future.pyi)."},
    {0, NULL},
};

static PyType_Slot waiting_record_slots[] = {
    {Py_tp_new, waiting_record_new},
    {Py_tp_dealloc, waiting_record_dealloc},
    {Py_tp_members, waiting_record_members},
    {Py_tp_doc, "WaitingRecord(group, topic, value, key, headers, partition, timestamp, deadline): the "
                "future of a record waiting for metadata or memory, carrying the record."},
    {0, NULL},
};

/* No Py_TPFLAGS_HAVE_GC: the point of this module. BASETYPE so that WaitingRecord derives. */
static PyType_Spec record_future_spec = {
    "client.record_future.RecordFuture", sizeof(RecordFutureObject), 0,
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE, record_future_slots,
};

static PyType_Spec waiting_record_spec = {
    "client.record_future.WaitingRecord", sizeof(WaitingRecordObject), 0,
    Py_TPFLAGS_DEFAULT, waiting_record_slots,
};

static int
module_exec(PyObject *m)
{
    struct { PyObject **slot; const char *text; } names[] = {
        {&str_future, "future"}, {&str_results, "results"}, {&str_topic, "topic"}, {&str_partition, "partition"},
        {&str_result, "result"}, {&str_exception, "exception"}, {&str_done, "done"}, {&str_cancelled, "cancelled"},
        {&str_get_loop, "get_loop"},
    };
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        if (*names[i].slot == NULL && (*names[i].slot = PyUnicode_InternFromString(names[i].text)) == NULL)
            return -1;
    }
    PyObject *rf = PyType_FromModuleAndSpec(m, &record_future_spec, NULL);
    if (rf == NULL)
        return -1;
    if (PyModule_AddObjectRef(m, "RecordFuture", rf) < 0) {
        Py_DECREF(rf);
        return -1;
    }
    record_future_type = (PyTypeObject *)rf; /* the module keeps it alive */
    PyObject *wr = PyType_FromModuleAndSpec(m, &waiting_record_spec, rf);
    Py_DECREF(rf);
    if (wr == NULL)
        return -1;
    waiting_record_type = (PyTypeObject *)wr; /* the module keeps it alive */
    if (PyModule_AddObjectRef(m, "WaitingRecord", wr) < 0) {
        Py_DECREF(wr);
        return -1;
    }
    Py_DECREF(wr);
    return 0;
}

/* new_metadata(cls, topic, partition, offset, timestamp): tuple.__new__(cls, (topic, partition,
 * offset, timestamp)) for the RecordMetadata NamedTuple, taken out of the cyclic collector when
 * every field is an exact str or int (a tuple of those cannot be part of a cycle). CPython
 * untracks exact tuples of such items in its first collection; instances of a tuple subclass it
 * never untracks, and gather() over a burst makes a million of them at once. */
static PyObject *
new_metadata(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 5 || !PyType_Check(args[0]) || !PyType_IsSubtype((PyTypeObject *)args[0], &PyTuple_Type)) {
        PyErr_SetString(PyExc_TypeError, "new_metadata(cls, topic, partition, offset, timestamp): cls a tuple type");
        return NULL;
    }
    return make_metadata((PyTypeObject *)args[0], args[1], args[2], args[3], args[4]);
}

/* configure(ProducerBatch, RecordMetadata, methods): the classes the fast paths of
 * RecordFuture's methods recognise, and the class whose methods (looked up by name, once:
 * py_method_names) answer everything else. client.record_future calls it once, with the
 * pure-Python RecordFuture of client/_record_future_py.py. */
static PyObject *
configure(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3 || !PyType_Check(args[0]) || !PyType_Check(args[1]) || !PyType_Check(args[2]) ||
        !PyType_IsSubtype((PyTypeObject *)args[1], &PyTuple_Type)) {
        PyErr_SetString(PyExc_TypeError, "configure(ProducerBatch, RecordMetadata, methods): three classes");
        return NULL;
    }
    PyObject *found[N_PY_METHODS];
    for (int i = 0; i < N_PY_METHODS; i++) {
        found[i] = PyObject_GetAttrString(args[2], py_method_names[i]);
        if (found[i] == NULL || !PyCallable_Check(found[i])) {
            if (found[i] != NULL)
                PyErr_Format(PyExc_TypeError, "configure(): %s is not callable", py_method_names[i]);
            for (int j = 0; j <= i; j++)
                Py_XDECREF(found[j]);
            return NULL;
        }
    }
    for (int i = 0; i < N_PY_METHODS; i++)
        Py_XSETREF(py_methods[i], found[i]);
    Py_XSETREF(producer_batch_type, (PyTypeObject *)Py_NewRef(args[0]));
    Py_XSETREF(record_metadata_type, (PyTypeObject *)Py_NewRef(args[1]));
    Py_RETURN_NONE;
}

static int
get_long_attr(PyObject *o, const char *name, long long *out)
{
    PyObject *v = PyObject_GetAttrString(o, name);
    if (v == NULL)
        return -1;
    *out = PyLong_AsLongLong(v);
    Py_DECREF(v);
    return (*out == -1 && PyErr_Occurred()) ? -1 : 0;
}

static int
set_long_attr(PyObject *o, const char *name, long long value)
{
    PyObject *v = PyLong_FromLongLong(value);
    if (v == NULL)
        return -1;
    int rc = PyObject_SetAttrString(o, name, v);
    Py_DECREF(v);
    return rc;
}

/* Append (group, n) to groups; steals nothing. */
static int
add_group(PyObject *groups, PyObject *group, Py_ssize_t n)
{
    PyObject *item = Py_BuildValue("(On)", group, n);
    if (item == NULL)
        return -1;
    int rc = PyList_Append(groups, item);
    Py_DECREF(item);
    return rc;
}

/* place_run(queue, batch, topic, partition, append_record) -> (placed, groups)
 *
 * RecordAccumulator.drain_waiting's common case in one call: while the record at the head of
 * ``queue`` (a deque of WaitingRecord) is for ``topic`` with no key and no headers, a bytes
 * value, a timestamp not before the batch's first, and partition None (``partition`` is None:
 * the sticky partition's batch) or equal to ``partition``, append it to ``batch`` with
 * ``append_record(buf, capacity, timestamp_delta, offset_delta, None, value)`` (the codec's
 * encoder), pop it, and point it at the batch (``_batch``, ``_index``; value, key and headers
 * dropped). Stops at the first record that does not qualify or does not fit, leaving it at the
 * head for the caller. ``batch.count``/``max_ts`` are updated. Returns how many records were
 * placed and ``[(group, n), ...]``: how many left each WaitGroup, in order, for the caller's
 * bookkeeping (the group's ``pending`` count and ``batches``). */
static PyObject *
place_run(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError, "place_run(queue, batch, topic, partition, append_record)");
        return NULL;
    }
    PyObject *queue = args[0], *batch = args[1], *topic = args[2], *partition = args[3], *append = args[4];
    long long capacity, base_ts, count, max_ts;
    if (get_long_attr(batch, "capacity", &capacity) < 0 || get_long_attr(batch, "base_ts", &base_ts) < 0 ||
        get_long_attr(batch, "count", &count) < 0 || get_long_attr(batch, "max_ts", &max_ts) < 0)
        return NULL;
    PyObject *buf = PyObject_GetAttrString(batch, "buf");
    if (buf == NULL)
        return NULL;
    PyObject *popleft = PyObject_GetAttrString(queue, "popleft");
    PyObject *groups = PyList_New(0);
    PyObject *cur_group = NULL; /* strong reference */
    Py_ssize_t cur_n = 0, placed = 0;
    long long count0 = count;
    if (popleft == NULL || groups == NULL)
        goto error;
    Py_ssize_t left = PyObject_Length(queue);
    if (left < 0)
        goto error;
    while (left > 0) {
        PyObject *head = PySequence_GetItem(queue, 0);
        if (head == NULL)
            goto error;
        if (Py_TYPE(head) != waiting_record_type) {
            Py_DECREF(head);
            break;
        }
        WaitingRecordObject *wr = (WaitingRecordObject *)head;
        int ok = wr->key == NULL || wr->key == Py_None;
        ok = ok && (wr->headers == NULL || wr->headers == Py_None);
        ok = ok && wr->value != NULL && PyBytes_CheckExact(wr->value);
        ok = ok && wr->topic != NULL && (wr->topic == topic || (PyUnicode_Check(wr->topic) &&
                                                              PyUnicode_Compare(wr->topic, topic) == 0));
        if (ok) {
            PyObject *p = wr->partition == NULL ? Py_None : wr->partition;
            if (partition == Py_None)
                ok = p == Py_None;
            else
                ok = p != Py_None && PyLong_CheckExact(p) && PyObject_RichCompareBool(p, partition, Py_EQ) == 1;
        }
        long long ts = wr->base.timestamp;
        if (!ok || ts < base_ts) {
            PyErr_Clear(); /* a failed comparison only means: not ours to place */
            Py_DECREF(head);
            break;
        }
        PyObject *call_args[6];
        PyObject *tsd = PyLong_FromLongLong(ts - base_ts);
        PyObject *odelta = PyLong_FromLongLong(count);
        PyObject *cap = PyLong_FromLongLong(capacity);
        if (tsd == NULL || odelta == NULL || cap == NULL) {
            Py_XDECREF(tsd);
            Py_XDECREF(odelta);
            Py_XDECREF(cap);
            Py_DECREF(head);
            goto error;
        }
        call_args[0] = buf;
        call_args[1] = cap;
        call_args[2] = tsd;
        call_args[3] = odelta;
        call_args[4] = Py_None;
        call_args[5] = wr->value;
        PyObject *fits = PyObject_Vectorcall(append, call_args, 6, NULL);
        Py_DECREF(tsd);
        Py_DECREF(odelta);
        Py_DECREF(cap);
        if (fits == NULL) {
            Py_DECREF(head);
            goto error;
        }
        int fit = PyObject_IsTrue(fits);
        Py_DECREF(fits);
        if (fit <= 0) {
            Py_DECREF(head);
            if (fit < 0)
                goto error;
            break; /* the batch is full */
        }
        PyObject *popped = PyObject_CallNoArgs(popleft);
        if (popped == NULL) {
            Py_DECREF(head);
            goto error;
        }
        Py_DECREF(popped);
        left--;
        PyObject *group = wr->base.batch; /* the WaitGroup */
        if (group != cur_group) {
            if (cur_group != NULL && add_group(groups, cur_group, cur_n) < 0) {
                Py_DECREF(head);
                goto error;
            }
            Py_XSETREF(cur_group, Py_NewRef(group));
            cur_n = 0;
        }
        cur_n++;
        Py_SETREF(wr->base.batch, Py_NewRef(batch));
        wr->base.index = (Py_ssize_t)count;
        Py_CLEAR(wr->value);
        Py_CLEAR(wr->key);
        Py_CLEAR(wr->headers);
        count++;
        placed++;
        if (ts > max_ts)
            max_ts = ts;
        Py_DECREF(head);
    }
    if (cur_group != NULL && add_group(groups, cur_group, cur_n) < 0)
        goto error;
    Py_CLEAR(cur_group);
    Py_DECREF(buf);
    Py_DECREF(popleft);
    if (count != count0 && (set_long_attr(batch, "count", count) < 0 || set_long_attr(batch, "max_ts", max_ts) < 0)) {
        Py_DECREF(groups);
        return NULL;
    }
    PyObject *out = Py_BuildValue("(nN)", placed, groups);
    return out;
error:
    /* Records already placed stay placed: write back what they changed, then report. */
    if (count != count0) {
        PyObject *et, *ev, *tb;
        PyErr_Fetch(&et, &ev, &tb);
        set_long_attr(batch, "count", count);
        set_long_attr(batch, "max_ts", max_ts);
        PyErr_Restore(et, ev, tb);
    }
    Py_XDECREF(cur_group);
    Py_DECREF(buf);
    Py_XDECREF(popleft);
    Py_XDECREF(groups);
    return NULL;
}

/* new_record_future(batch, index, timestamp): RecordFuture(batch, index, timestamp) without
 * building an argument tuple (the producer makes one per record sent). */
static PyObject *
new_record_future(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3 || record_future_type == NULL) {
        PyErr_SetString(PyExc_TypeError, "new_record_future(batch, index, timestamp)");
        return NULL;
    }
    Py_ssize_t index = PyLong_AsSsize_t(args[1]);
    if (index == -1 && PyErr_Occurred())
        return NULL;
    long long timestamp = PyLong_AsLongLong(args[2]);
    if (timestamp == -1 && PyErr_Occurred())
        return NULL;
    return make_record_future(record_future_type, args[0], index, timestamp);
}

/* new_waiting_record(group, topic, value, key, headers, partition, timestamp, deadline): the
 * same for WaitingRecord (one per record sent before its topic's metadata arrives). */
static PyObject *
new_waiting_record(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 8 || waiting_record_type == NULL) {
        PyErr_SetString(PyExc_TypeError,
                        "new_waiting_record(group, topic, value, key, headers, partition, timestamp, deadline)");
        return NULL;
    }
    long long timestamp = PyLong_AsLongLong(args[6]);
    if (timestamp == -1 && PyErr_Occurred())
        return NULL;
    double deadline = PyFloat_AsDouble(args[7]);
    if (deadline == -1.0 && PyErr_Occurred())
        return NULL;
    return make_waiting_record(waiting_record_type, args[0], args[1], args[2], args[3], args[4], args[5], timestamp,
                               deadline);
}

static PyMethodDef module_methods[] = {
    {"new_record_future", (PyCFunction)(void (*)(void))new_record_future, METH_FASTCALL,
     "new_record_future(batch, index, timestamp) -> RecordFuture"},
    {"new_waiting_record", (PyCFunction)(void (*)(void))new_waiting_record, METH_FASTCALL,
     "new_waiting_record(group, topic, value, key, headers, partition, timestamp, deadline) -> WaitingRecord"},
    {"configure", (PyCFunction)(void (*)(void))configure, METH_FASTCALL,
     "configure(ProducerBatch, RecordMetadata, methods): the classes RecordFuture's fast paths recognise, "
     "and the class whose methods answer the rest"},
    {"place_run", (PyCFunction)(void (*)(void))place_run, METH_FASTCALL,
     "place_run(queue, batch, topic, partition, append_record) -> (placed, [(group, n), ...])"},
    {"new_metadata", (PyCFunction)(void (*)(void))new_metadata, METH_FASTCALL,
     "new_metadata(cls, topic, partition, offset, timestamp) -> cls instance outside the cyclic collector"},
    {NULL, NULL, 0, NULL},
};

static PyModuleDef_Slot module_slots[] = {
    {Py_mod_exec, module_exec},
    {0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "client._record_future",
    "Record futures outside the cyclic garbage collector (use client.record_future).",
    0, module_methods, module_slots, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__record_future(void)
{
    return PyModuleDef_Init(&module);
}
