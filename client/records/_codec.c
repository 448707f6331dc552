/*
 * client.records._codec: the C record codecs: the decoders of client.records.columnar
 * (decode_lists, decode_columns, decode_records) and the producer's append_record.
 *
 * It parses the records section of one RecordBatch v2 (the bytes after the 61-byte batch
 * header, already decompressed): `count` records back to back, each
 *
 *     length          varint   number of bytes after this varint (the rest of the record)
 *     attributes      int8     unused, skipped
 *     timestampDelta  varlong  added to the batch's base timestamp
 *     offsetDelta     varint   added to the batch's base offset
 *     keyLength       varint   -1 = null key
 *     key             bytes[keyLength]
 *     valueLength     varint   -1 = null value
 *     value           bytes[valueLength]
 *     headerCount     varint
 *     headers         headerCount x (keyLength varint >= 0, key UTF-8 bytes,
 *                                    valueLength varint (-1 = null), value bytes)
 *
 * Varints are zigzag-encoded (protobuf's sint64), least significant 7-bit group first, at most
 * 10 bytes; every varint is read as a 64-bit value (client.records.varint.read_varint does the
 * same), whatever its field.
 *
 * decode_lists(data, count, base_offset=0, base_timestamp=0)
 *     -> (offsets, timestamps, keys, values, headers)
 * returns the same lists as the pure-Python version: ints, ``bytes | None`` keys and values,
 * and per record a tuple of ``(str, bytes | None)`` headers (the shared empty tuple when there
 * are none); header keys are decoded as ``bytes.decode("utf-8", "replace")`` does. Keys and
 * values are always ``bytes`` (the Python version returns slices of the input's type).
 *
 * decode_columns(data, count, base_offset=0, base_timestamp=0) is the same walk writing
 * straight into column buffers (Arrow's layouts: int64 offsets and timestamps, binary keys and
 * values as data + int32 offsets + validity bitmap): no Python object per record, except for
 * headers. See its docstring below.
 *
 * Safety: every varint and every length is checked against the end of its record (and each
 * record's end against the end of the buffer) before anything is read; lengths are compared as
 * `len > end - p` so hostile 64-bit values cannot overflow; `count` must fit (7 bytes per record
 * at least) before the lists are allocated; a record must end exactly where its length says and
 * the section must hold exactly `count` records. Any violation raises
 * client.records.batch.CorruptRecordError (the Python version's exception); nothing reads out of
 * bounds. base_offset + delta and base_timestamp + delta that overflow int64 are computed as
 * Python ints, exactly as in Python. base_offset and base_timestamp must fit in an int64.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

static PyObject *CorruptRecordError; /* client.records.batch.CorruptRecordError */

/* Read one zigzag varint at d[*pp], not past d[end]. 0 on success, -1 when it runs past `end`
 * or is longer than 10 bytes (as read_varint). */
static inline int
read_varint(const unsigned char *d, Py_ssize_t end, Py_ssize_t *pp, int64_t *out)
{
    Py_ssize_t p = *pp;
    if (p >= end)
        return -1;
    uint64_t b = d[p++];
    if (b < 0x80) {
        *out = (int64_t)((b >> 1) ^ (0 - (b & 1)));
        *pp = p;
        return 0;
    }
    uint64_t r = b & 0x7f;
    int shift = 7;
    for (;;) {
        if (p >= end || shift > 63)
            return -1;
        b = d[p++];
        r |= (b & 0x7f) << shift; /* shift <= 63: bits past 64 drop, as `& 0xFFFF...` does */
        if (b < 0x80)
            break;
        shift += 7;
    }
    *out = (int64_t)((r >> 1) ^ (0 - (r & 1)));
    *pp = p;
    return 0;
}

/* a + b as a Python int, exact even when it overflows int64. */
static PyObject *
add_int(int64_t a, int64_t b)
{
    if ((b > 0 && a > INT64_MAX - b) || (b < 0 && a < INT64_MIN - b)) {
        PyObject *x = PyLong_FromLongLong(a), *y = NULL, *r = NULL;
        if (x && (y = PyLong_FromLongLong(b)))
            r = PyNumber_Add(x, y);
        Py_XDECREF(x);
        Py_XDECREF(y);
        return r;
    }
    return PyLong_FromLongLong(a + b);
}

/* The headers of one record: the count varint is at d[*pp]; everything must lie before `end`.
 * Returns a new reference (the empty tuple for zero headers) or NULL with an exception set. */
static PyObject *
read_headers(const unsigned char *d, Py_ssize_t end, Py_ssize_t *pp)
{
    Py_ssize_t p = *pp;
    int64_t nh, n;
    if (read_varint(d, end, &p, &nh))
        goto bad_varint;
    if (nh < 0 || nh > end - p) {
        PyErr_Format(CorruptRecordError, "record header count %lld is invalid", (long long)nh);
        return NULL;
    }
    PyObject *out = PyTuple_New((Py_ssize_t)nh);
    if (out == NULL)
        return NULL;
    for (Py_ssize_t j = 0; j < (Py_ssize_t)nh; j++) {
        PyObject *hk, *hv, *pair;
        if (read_varint(d, end, &p, &n)) {
            Py_DECREF(out);
            goto bad_varint;
        }
        if (n < 0 || n > end - p) {
            Py_DECREF(out);
            PyErr_SetString(CorruptRecordError, "record header key is null or runs past the record");
            return NULL;
        }
        hk = PyUnicode_DecodeUTF8((const char *)d + p, (Py_ssize_t)n, "replace");
        if (hk == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        p += (Py_ssize_t)n;
        if (read_varint(d, end, &p, &n)) {
            Py_DECREF(hk);
            Py_DECREF(out);
            goto bad_varint;
        }
        if (n < -1 || n > end - p) {
            Py_DECREF(hk);
            Py_DECREF(out);
            PyErr_SetString(CorruptRecordError, "record header value runs past the record");
            return NULL;
        }
        if (n < 0) {
            hv = Py_NewRef(Py_None);
        } else {
            hv = PyBytes_FromStringAndSize((const char *)d + p, (Py_ssize_t)n);
            if (hv == NULL) {
                Py_DECREF(hk);
                Py_DECREF(out);
                return NULL;
            }
            p += (Py_ssize_t)n;
        }
        pair = PyTuple_New(2);
        if (pair == NULL) {
            Py_DECREF(hk);
            Py_DECREF(hv);
            Py_DECREF(out);
            return NULL;
        }
        PyTuple_SET_ITEM(pair, 0, hk); /* steals */
        PyTuple_SET_ITEM(pair, 1, hv);
        PyTuple_SET_ITEM(out, j, pair);
    }
    *pp = p;
    return out;
bad_varint:
    PyErr_SetString(CorruptRecordError, "bad varint in record headers (past the record or longer than 10 bytes)");
    return NULL;
}

/* A key or value: length varint at d[*pp], then the bytes; -1 = None. NULL + exception on error. */
static inline PyObject *
read_blob(const unsigned char *d, Py_ssize_t end, Py_ssize_t *pp, const char *what)
{
    int64_t n;
    if (read_varint(d, end, pp, &n)) {
        PyErr_Format(CorruptRecordError, "corrupt record: %s length varint runs past the record", what);
        return NULL;
    }
    if (n < 0) {
        if (n == -1)
            return Py_NewRef(Py_None);
        PyErr_Format(CorruptRecordError, "corrupt record: %s length %lld", what, (long long)n);
        return NULL;
    }
    if (n > end - *pp) {
        PyErr_Format(CorruptRecordError, "corrupt record: %s of %lld bytes runs past the record", what, (long long)n);
        return NULL;
    }
    PyObject *r = PyBytes_FromStringAndSize((const char *)d + *pp, (Py_ssize_t)n);
    *pp += (Py_ssize_t)n;
    return r;
}

/* One record at d[*pp] (not past n): its deltas, key, value (new references, None for null)
 * and headers (a new reference; `empty` for none). 0, or -1 with CorruptRecordError set and no
 * references left. */
static int
parse_record(const unsigned char *d, Py_ssize_t n, Py_ssize_t *pp, PyObject *empty, int64_t *tsd, int64_t *od,
             PyObject **key, PyObject **val, PyObject **hdrs)
{
    Py_ssize_t p = *pp;
    int64_t len;
    *key = *val = *hdrs = NULL;
    if (read_varint(d, n, &p, &len))
        goto truncated;
    if (len < 0 || len > n - p) {
        PyErr_Format(CorruptRecordError, "corrupt record: length %lld (%zd bytes left)", (long long)len, n - p);
        return -1;
    }
    const Py_ssize_t end = p + (Py_ssize_t)len;
    p++; /* attributes; read_varint below fails if this passed `end` */
    if (read_varint(d, end, &p, tsd) || read_varint(d, end, &p, od))
        goto truncated;
    if (!(*key = read_blob(d, end, &p, "key")) || !(*val = read_blob(d, end, &p, "value")))
        goto fail;
    if (p + 1 == end && d[p] == 0) { /* no headers: the common case */
        p = end;
        *hdrs = Py_NewRef(empty);
    } else {
        if (p >= end) {
            PyErr_SetString(CorruptRecordError, "corrupt record: fields run past the record length");
            goto fail;
        }
        if (!(*hdrs = read_headers(d, end, &p)))
            goto fail;
        if (p != end) {
            PyErr_SetString(CorruptRecordError, "corrupt record: record length does not match its fields");
            goto fail;
        }
    }
    *pp = p;
    return 0;
truncated:
    PyErr_Format(CorruptRecordError, "records section ends inside a record (%zd bytes)", n);
fail:
    Py_CLEAR(*key);
    Py_CLEAR(*val);
    Py_CLEAR(*hdrs);
    return -1;
}

/* `count` from a Python int into *out, -1 when out of range (reported by the caller as a bad
 * count). Returns -1 (exception set) only when count_obj is not an int. */
static int
parse_count(PyObject *count_obj, Py_ssize_t *out)
{
    Py_ssize_t count = PyLong_AsSsize_t(count_obj);
    if (count == -1 && PyErr_Occurred()) {
        if (!PyErr_ExceptionMatches(PyExc_OverflowError))
            return -1;
        PyErr_Clear();
    }
    *out = count;
    return 0;
}

PyDoc_STRVAR(decode_lists_doc,
"decode_lists(data, count, base_offset=0, base_timestamp=0)\n"
"--\n\n"
"Decode ``count`` records from an (uncompressed) RecordBatch v2 records section.\n"
"Returns ``(offsets, timestamps, keys, values, headers)``; raises CorruptRecordError.\n"
"The C version of ``client.records.columnar.decode_lists_py``.");

static PyObject *
decode_lists(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"data", "count", "base_offset", "base_timestamp", NULL};
    Py_buffer buf;
    PyObject *count_obj;
    long long bo_ll = 0, bt_ll = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "y*O|LL:decode_lists", kwlist, &buf, &count_obj, &bo_ll, &bt_ll))
        return NULL;
    const int64_t bo = bo_ll, bt = bt_ll;
    const unsigned char *d = (const unsigned char *)buf.buf;
    const Py_ssize_t n = buf.len;
    Py_ssize_t p = 0, i;
    PyObject *ods = NULL, *tss = NULL, *keys = NULL, *vals = NULL, *hdrs = NULL, *empty = NULL, *o;

    Py_ssize_t count;
    if (parse_count(count_obj, &count))
        goto fail;
    if (count < 0 || count > n / 7) { /* a record takes at least 7 bytes: no huge lists */
        PyErr_Format(CorruptRecordError, "records count %S cannot fit in %zd bytes", count_obj, n);
        goto fail;
    }
    if (!(ods = PyList_New(count)) || !(tss = PyList_New(count)) || !(keys = PyList_New(count)) ||
        !(vals = PyList_New(count)) || !(hdrs = PyList_New(count)) || !(empty = PyTuple_New(0)))
        goto fail;
    /* Lists fresh from PyList_New hold NULLs; list_dealloc skips them, so a partly filled list
     * is freed correctly on the error paths. */
    for (i = 0; i < count; i++) {
        int64_t tsd, od;
        PyObject *k, *v, *h;
        if (parse_record(d, n, &p, empty, &tsd, &od, &k, &v, &h))
            goto fail;
        PyList_SET_ITEM(keys, i, k);
        PyList_SET_ITEM(vals, i, v);
        PyList_SET_ITEM(hdrs, i, h);
        if (!(o = add_int(bt, tsd)))
            goto fail;
        PyList_SET_ITEM(tss, i, o);
        if (!(o = add_int(bo, od)))
            goto fail;
        PyList_SET_ITEM(ods, i, o);
    }
    if (p != n) {
        PyErr_Format(CorruptRecordError, "%zd bytes left over after %zd records", n - p, count);
        goto fail;
    }
    Py_DECREF(empty);
    PyBuffer_Release(&buf);
    return Py_BuildValue("(NNNNN)", ods, tss, keys, vals, hdrs); /* steals all five, even on failure */

fail:
    Py_XDECREF(ods);
    Py_XDECREF(tss);
    Py_XDECREF(keys);
    Py_XDECREF(vals);
    Py_XDECREF(hdrs);
    Py_XDECREF(empty);
    PyBuffer_Release(&buf);
    return NULL;
}

/* ---------------------------------------------------------------- decode_records */

PyDoc_STRVAR(decode_records_doc,
"decode_records(data, count, cls, topic, partition, timestamp_type, base_offset, base_timestamp,\n"
"               position, fixed_timestamp=None)\n"
"--\n\n"
"The records of a records section as a list of ``cls`` instances (a tuple subclass without\n"
"fields of its own, e.g. the ConsumerRecord NamedTuple): ``cls(topic, partition, offset,\n"
"timestamp, timestamp_type, key, value, headers)``, built in C, for the records whose offset\n"
"is >= ``position``. ``fixed_timestamp`` (LogAppendTime) replaces every record's timestamp.\n"
"Same checks and CorruptRecordError as decode_lists, over every record of the section.");

static PyObject *
decode_records(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"data", "count", "cls", "topic", "partition", "timestamp_type", "base_offset",
                             "base_timestamp", "position", "fixed_timestamp", NULL};
    Py_buffer buf;
    PyObject *count_obj, *cls_obj, *topic, *partition, *ttype, *fixed = Py_None;
    long long bo_ll, bt_ll, pos_ll;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "y*OOOOOLLL|O:decode_records", kwlist, &buf, &count_obj,
                                     &cls_obj, &topic, &partition, &ttype, &bo_ll, &bt_ll, &pos_ll, &fixed))
        return NULL;
    const int64_t bo = bo_ll, bt = bt_ll, position = pos_ll;
    const unsigned char *d = (const unsigned char *)buf.buf;
    const Py_ssize_t n = buf.len;
    Py_ssize_t p = 0, i, kept = 0;
    PyObject *rows = NULL, *empty = NULL;
    PyTypeObject *cls = (PyTypeObject *)cls_obj;

    if (!PyType_Check(cls_obj) || !PyType_IsSubtype(cls, &PyTuple_Type) ||
        cls->tp_basicsize != PyTuple_Type.tp_basicsize || cls->tp_itemsize != PyTuple_Type.tp_itemsize) {
        PyErr_SetString(PyExc_TypeError, "cls must be a tuple subclass without fields of its own");
        goto fail;
    }
    Py_ssize_t count;
    if (parse_count(count_obj, &count))
        goto fail;
    if (count < 0 || count > n / 7) {
        PyErr_Format(CorruptRecordError, "records count %S cannot fit in %zd bytes", count_obj, n);
        goto fail;
    }
    if (!(rows = PyList_New(count)) || !(empty = PyTuple_New(0)))
        goto fail;
    for (i = 0; i < count; i++) {
        int64_t tsd, od;
        PyObject *k, *v, *h, *off, *ts, *row;
        if (parse_record(d, n, &p, empty, &tsd, &od, &k, &v, &h))
            goto fail;
        int overflow = (od > 0 && bo > INT64_MAX - od) || (od < 0 && bo < INT64_MIN - od);
        if (overflow ? od < 0 : bo + od < position) { /* before the consumer's position: dropped */
            Py_DECREF(k);
            Py_DECREF(v);
            Py_DECREF(h);
            continue;
        }
        off = add_int(bo, od);
        ts = fixed != Py_None ? Py_NewRef(fixed) : add_int(bt, tsd);
        row = (off && ts) ? cls->tp_alloc(cls, 8) : NULL;
        if (row == NULL) {
            Py_XDECREF(off);
            Py_XDECREF(ts);
            Py_DECREF(k);
            Py_DECREF(v);
            Py_DECREF(h);
            goto fail;
        }
        PyTuple_SET_ITEM(row, 0, Py_NewRef(topic));
        PyTuple_SET_ITEM(row, 1, Py_NewRef(partition));
        PyTuple_SET_ITEM(row, 2, off);
        PyTuple_SET_ITEM(row, 3, ts);
        PyTuple_SET_ITEM(row, 4, Py_NewRef(ttype));
        PyTuple_SET_ITEM(row, 5, k);
        PyTuple_SET_ITEM(row, 6, v);
        PyTuple_SET_ITEM(row, 7, h);
        PyList_SET_ITEM(rows, kept++, row);
    }
    if (p != n) {
        PyErr_Format(CorruptRecordError, "%zd bytes left over after %zd records", n - p, count);
        goto fail;
    }
    if (kept < count && PyList_SetSlice(rows, kept, count, NULL))
        goto fail;
    Py_DECREF(empty);
    PyBuffer_Release(&buf);
    return rows;

fail:
    Py_XDECREF(rows);
    Py_XDECREF(empty);
    PyBuffer_Release(&buf);
    return NULL;
}

/* ---------------------------------------------------------------- decode_columns */

/* A key or value into a column: length varint at d[*pp]; the bytes are appended to `data` at
 * *used; `offs[i + 1]` gets the new end; a null clears bit i of `valid`. 0, or -1 + exception. */
static inline int
read_into_column(const unsigned char *d, Py_ssize_t end, Py_ssize_t *pp, const char *what, char *data,
                 Py_ssize_t *used, int32_t *offs, unsigned char *valid, Py_ssize_t *nulls, Py_ssize_t i)
{
    int64_t n;
    if (read_varint(d, end, pp, &n)) {
        PyErr_Format(CorruptRecordError, "corrupt record: %s length varint runs past the record", what);
        return -1;
    }
    if (n < 0) {
        if (n != -1) {
            PyErr_Format(CorruptRecordError, "corrupt record: %s length %lld", what, (long long)n);
            return -1;
        }
        valid[i >> 3] &= (unsigned char)~(1u << (i & 7));
        (*nulls)++;
    } else {
        if (n > end - *pp) {
            PyErr_Format(CorruptRecordError, "corrupt record: %s of %lld bytes runs past the record", what,
                         (long long)n);
            return -1;
        }
        memcpy(data + *used, d + *pp, (size_t)n);
        *used += (Py_ssize_t)n;
        *pp += (Py_ssize_t)n;
    }
    offs[i + 1] = (int32_t)*used;
    return 0;
}

PyDoc_STRVAR(decode_columns_doc,
"decode_columns(data, count, base_offset=0, base_timestamp=0)\n"
"--\n\n"
"Decode ``count`` records into column buffers, no Python object per record:\n"
"``(offsets, timestamps, key_data, key_offsets, key_validity, key_nulls, value_data,\n"
"value_offsets, value_validity, value_nulls, headers)``: offsets and timestamps are native\n"
"int64s, *_offsets native int32s (count + 1), *_validity an Arrow bitmap or None when nothing\n"
"is null, headers None when no record has any (else a list as decode_lists gives).\n"
"Same checks and CorruptRecordError as decode_lists; offsets or timestamps that overflow\n"
"int64 are corrupt too.");

static PyObject *
decode_columns(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"data", "count", "base_offset", "base_timestamp", NULL};
    Py_buffer buf;
    PyObject *count_obj;
    long long bo_ll = 0, bt_ll = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "y*O|LL:decode_columns", kwlist, &buf, &count_obj, &bo_ll,
                                     &bt_ll))
        return NULL;
    const int64_t bo = bo_ll, bt = bt_ll;
    const unsigned char *d = (const unsigned char *)buf.buf;
    const Py_ssize_t n = buf.len;
    Py_ssize_t p = 0, i, kused = 0, vused = 0, knulls = 0, vnulls = 0;
    PyObject *ods = NULL, *tss = NULL, *kdata = NULL, *koffs = NULL, *kvalid = NULL, *vdata = NULL,
             *voffs = NULL, *vvalid = NULL, *hdrs = NULL, *empty = NULL, *o;

    Py_ssize_t count;
    if (parse_count(count_obj, &count))
        goto fail;
    if (count < 0 || count > n / 7 || n > INT32_MAX) {
        PyErr_Format(CorruptRecordError, "records count %S cannot fit in %zd bytes", count_obj, n);
        goto fail;
    }
    const Py_ssize_t vbytes = (count + 7) >> 3;
    if (!(ods = PyBytes_FromStringAndSize(NULL, 8 * count)) || !(tss = PyBytes_FromStringAndSize(NULL, 8 * count)) ||
        !(kdata = PyBytes_FromStringAndSize(NULL, n)) || !(vdata = PyBytes_FromStringAndSize(NULL, n)) ||
        !(koffs = PyBytes_FromStringAndSize(NULL, 4 * (count + 1))) ||
        !(voffs = PyBytes_FromStringAndSize(NULL, 4 * (count + 1))) ||
        !(kvalid = PyBytes_FromStringAndSize(NULL, vbytes)) || !(vvalid = PyBytes_FromStringAndSize(NULL, vbytes)))
        goto fail;
    int64_t *od_out = (int64_t *)PyBytes_AS_STRING(ods), *ts_out = (int64_t *)PyBytes_AS_STRING(tss);
    int32_t *ko = (int32_t *)PyBytes_AS_STRING(koffs), *vo = (int32_t *)PyBytes_AS_STRING(voffs);
    unsigned char *kv = (unsigned char *)PyBytes_AS_STRING(kvalid), *vv = (unsigned char *)PyBytes_AS_STRING(vvalid);
    char *kd = PyBytes_AS_STRING(kdata), *vd = PyBytes_AS_STRING(vdata);
    memset(kv, 0xff, (size_t)vbytes);
    memset(vv, 0xff, (size_t)vbytes);
    if (count & 7) { /* Arrow: padding bits past the last element are 0 */
        kv[vbytes - 1] = vv[vbytes - 1] = (unsigned char)((1u << (count & 7)) - 1);
    }
    ko[0] = vo[0] = 0;
    for (i = 0; i < count; i++) {
        int64_t len, tsd, od;
        if (read_varint(d, n, &p, &len))
            goto truncated;
        if (len < 0 || len > n - p) {
            PyErr_Format(CorruptRecordError, "corrupt record: length %lld (%zd bytes left)", (long long)len, n - p);
            goto fail;
        }
        const Py_ssize_t end = p + (Py_ssize_t)len;
        p++; /* attributes */
        if (read_varint(d, end, &p, &tsd) || read_varint(d, end, &p, &od))
            goto truncated;
        if ((tsd > 0 && bt > INT64_MAX - tsd) || (tsd < 0 && bt < INT64_MIN - tsd) ||
            (od > 0 && bo > INT64_MAX - od) || (od < 0 && bo < INT64_MIN - od)) {
            PyErr_SetString(CorruptRecordError, "record offset or timestamp overflows int64");
            goto fail;
        }
        ts_out[i] = bt + tsd;
        od_out[i] = bo + od;
        if (read_into_column(d, end, &p, "key", kd, &kused, ko, kv, &knulls, i) ||
            read_into_column(d, end, &p, "value", vd, &vused, vo, vv, &vnulls, i))
            goto fail;
        if (p + 1 == end && d[p] == 0) { /* no headers */
            p = end;
            if (hdrs != NULL)
                PyList_SET_ITEM(hdrs, i, Py_NewRef(empty));
        } else {
            if (p >= end) {
                PyErr_SetString(CorruptRecordError, "corrupt record: fields run past the record length");
                goto fail;
            }
            if (hdrs == NULL) { /* the first record with headers: the earlier ones have none */
                if (!(empty = PyTuple_New(0)) || !(hdrs = PyList_New(count)))
                    goto fail;
                for (Py_ssize_t j = 0; j < i; j++)
                    PyList_SET_ITEM(hdrs, j, Py_NewRef(empty));
            }
            if (!(o = read_headers(d, end, &p)))
                goto fail;
            PyList_SET_ITEM(hdrs, i, o);
            if (p != end) {
                PyErr_SetString(CorruptRecordError, "corrupt record: record length does not match its fields");
                goto fail;
            }
        }
    }
    if (p != n) {
        PyErr_Format(CorruptRecordError, "%zd bytes left over after %zd records", n - p, count);
        goto fail;
    }
    if (_PyBytes_Resize(&kdata, kused) || _PyBytes_Resize(&vdata, vused))
        goto fail;
    if (knulls == 0)
        Py_SETREF(kvalid, Py_NewRef(Py_None));
    if (vnulls == 0)
        Py_SETREF(vvalid, Py_NewRef(Py_None));
    if (hdrs == NULL)
        hdrs = Py_NewRef(Py_None);
    Py_XDECREF(empty);
    PyBuffer_Release(&buf);
    return Py_BuildValue("(NNNNNnNNNnN)", ods, tss, kdata, koffs, kvalid, knulls, vdata, voffs, vvalid, vnulls,
                         hdrs);

truncated:
    PyErr_Format(CorruptRecordError, "records section ends inside a record (%zd bytes, %zd records)", n, count);
fail:
    Py_XDECREF(ods);
    Py_XDECREF(tss);
    Py_XDECREF(kdata);
    Py_XDECREF(koffs);
    Py_XDECREF(kvalid);
    Py_XDECREF(vdata);
    Py_XDECREF(voffs);
    Py_XDECREF(vvalid);
    Py_XDECREF(hdrs);
    Py_XDECREF(empty);
    PyBuffer_Release(&buf);
    return NULL;
}

/* ---------------------------------------------------------------- decode_columns_run */

/* Big-endian readers for the 61-byte batch header (client.records.batch.HEADER_STRUCT). */
static inline int64_t be64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int k = 0; k < 8; k++)
        v = (v << 8) | p[k];
    return (int64_t)v;
}

static inline int32_t be32(const unsigned char *p)
{
    return (int32_t)(((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | (uint32_t)p[3]);
}

PyDoc_STRVAR(decode_columns_run_doc,
"decode_columns_run(buf, pos, end, position, max_records, crc=None)\n"
"--\n\n"
"Decode a run of whole RecordBatch v2 batches of ``buf[pos:end]`` into one set of column\n"
"buffers, as decode_columns does for one batch. The run is the longest prefix of batches that\n"
"are plain (magic 2, uncompressed, not control, recordsCount >= 1, all of one timestamp type),\n"
"start at or after ``position`` and hold at most ``max_records`` records in all. Returns None\n"
"when the first batch does not qualify, else ``(end_pos, batches, next_offset, timestamp_type,\n"
"offsets, timestamps, key_data, key_offsets, key_validity, key_nulls, value_data,\n"
"value_offsets, value_validity, value_nulls, headers)``: ``end_pos`` is where the run ends in\n"
"``buf``, ``next_offset`` the last batch's baseOffset + lastOffsetDelta + 1, the rest as\n"
"decode_columns (LogAppendTime batches give each record the batch's maxTimestamp). ``crc``:\n"
"a function of a memoryview giving its CRC-32C, checked over each batch's [21, end); None\n"
"skips the check. Any bad batch in the run (CRC, lengths, records) raises CorruptRecordError\n"
"and consumes nothing: the caller decodes batch by batch to report it where it is.");

static PyObject *
decode_columns_run(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"buf", "pos", "end", "position", "max_records", "crc", NULL};
    Py_buffer buf;
    Py_ssize_t pos, end, max_records;
    long long position_ll;
    PyObject *crc_fn = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "y*nnLn|O:decode_columns_run", kwlist, &buf, &pos, &end,
                                     &position_ll, &max_records, &crc_fn))
        return NULL;
    const int64_t position = position_ll;
    const unsigned char *b = (const unsigned char *)buf.buf;
    PyObject *ods = NULL, *tss = NULL, *kdata = NULL, *koffs = NULL, *kvalid = NULL, *vdata = NULL,
             *voffs = NULL, *vvalid = NULL, *hdrs = NULL, *empty = NULL, *o;
    if (pos < 0 || end > buf.len || pos > end) {
        PyErr_SetString(PyExc_ValueError, "decode_columns_run: pos/end outside the buffer");
        goto fail;
    }

    /* Pass 1, headers only: how far the run goes. */
    Py_ssize_t q = pos, total = 0, nbatches = 0;
    int ttype = -1;
    int64_t next_offset = 0;
    while (end - q >= 61) {
        const unsigned char *h = b + q;
        int32_t length = be32(h + 8);
        int attributes = (h[21] << 8) | h[22];
        int32_t last_delta = be32(h + 23), count = be32(h + 57);
        int64_t base = be64(h);
        int tt = (attributes & 0x08) ? 1 : 0;
        if (h[16] != 2 || length < 49 || (Py_ssize_t)length + 12 > end - q || (attributes & 0x27) || count < 1 ||
            last_delta < 0 || base < position || base > INT64_MAX - last_delta - 1 || (ttype >= 0 && tt != ttype) ||
            count > max_records - total || count > ((Py_ssize_t)length + 12 - 61) / 7)
            break;
        ttype = tt;
        total += count;
        nbatches++;
        next_offset = base + last_delta + 1;
        q += (Py_ssize_t)length + 12;
    }
    if (nbatches == 0 || q - pos > INT32_MAX) {
        PyBuffer_Release(&buf);
        Py_RETURN_NONE;
    }
    const Py_ssize_t run_end = q, vbytes = (total + 7) >> 3;
    if (!(ods = PyBytes_FromStringAndSize(NULL, 8 * total)) || !(tss = PyBytes_FromStringAndSize(NULL, 8 * total)) ||
        !(kdata = PyBytes_FromStringAndSize(NULL, run_end - pos)) ||
        !(vdata = PyBytes_FromStringAndSize(NULL, run_end - pos)) ||
        !(koffs = PyBytes_FromStringAndSize(NULL, 4 * (total + 1))) ||
        !(voffs = PyBytes_FromStringAndSize(NULL, 4 * (total + 1))) ||
        !(kvalid = PyBytes_FromStringAndSize(NULL, vbytes)) || !(vvalid = PyBytes_FromStringAndSize(NULL, vbytes)))
        goto fail;
    int64_t *od_out = (int64_t *)PyBytes_AS_STRING(ods), *ts_out = (int64_t *)PyBytes_AS_STRING(tss);
    int32_t *ko = (int32_t *)PyBytes_AS_STRING(koffs), *vo = (int32_t *)PyBytes_AS_STRING(voffs);
    unsigned char *kv = (unsigned char *)PyBytes_AS_STRING(kvalid), *vv = (unsigned char *)PyBytes_AS_STRING(vvalid);
    char *kd = PyBytes_AS_STRING(kdata), *vd = PyBytes_AS_STRING(vdata);
    Py_ssize_t i = 0, kused = 0, vused = 0, knulls = 0, vnulls = 0;
    memset(kv, 0xff, (size_t)vbytes);
    memset(vv, 0xff, (size_t)vbytes);
    if (total & 7)
        kv[vbytes - 1] = vv[vbytes - 1] = (unsigned char)((1u << (total & 7)) - 1);
    ko[0] = vo[0] = 0;

    /* Pass 2: check and decode each batch of the run. */
    for (q = pos; q < run_end;) {
        const unsigned char *h = b + q;
        const Py_ssize_t bend = q + (Py_ssize_t)be32(h + 8) + 12;
        const int64_t bo = be64(h), maxts = be64(h + 35);
        const int64_t bt = ttype ? 0 : be64(h + 27);
        const int32_t count = be32(h + 57);
        if (crc_fn != Py_None) {
            PyObject *mv = PyMemoryView_FromMemory((char *)h + 21, bend - q - 21, PyBUF_READ);
            PyObject *got = mv ? PyObject_CallOneArg(crc_fn, mv) : NULL;
            Py_XDECREF(mv);
            if (got == NULL)
                goto fail;
            unsigned long actual = PyLong_AsUnsignedLong(got);
            Py_DECREF(got);
            if (actual == (unsigned long)-1 && PyErr_Occurred())
                goto fail;
            if (actual != (unsigned long)(uint32_t)be32(h + 17)) {
                PyErr_SetString(CorruptRecordError, "record batch CRC mismatch");
                goto fail;
            }
        }
        const unsigned char *d = h + 61;
        const Py_ssize_t n = bend - q - 61;
        Py_ssize_t p = 0;
        for (int32_t r = 0; r < count; r++, i++) {
            int64_t len, tsd, od;
            if (read_varint(d, n, &p, &len) || len < 0 || len > n - p) {
                PyErr_SetString(CorruptRecordError, "corrupt record: bad length");
                goto fail;
            }
            const Py_ssize_t rend = p + (Py_ssize_t)len;
            p++; /* attributes */
            if (read_varint(d, rend, &p, &tsd) || read_varint(d, rend, &p, &od)) {
                PyErr_SetString(CorruptRecordError, "records section ends inside a record");
                goto fail;
            }
            if ((tsd > 0 && bt > INT64_MAX - tsd) || (tsd < 0 && bt < INT64_MIN - tsd) ||
                (od > 0 && bo > INT64_MAX - od) || (od < 0 && bo < INT64_MIN - od)) {
                PyErr_SetString(CorruptRecordError, "record offset or timestamp overflows int64");
                goto fail;
            }
            ts_out[i] = ttype ? maxts : bt + tsd;
            od_out[i] = bo + od;
            if (read_into_column(d, rend, &p, "key", kd, &kused, ko, kv, &knulls, i) ||
                read_into_column(d, rend, &p, "value", vd, &vused, vo, vv, &vnulls, i))
                goto fail;
            if (p + 1 == rend && d[p] == 0) { /* no headers */
                p = rend;
                if (hdrs != NULL)
                    PyList_SET_ITEM(hdrs, i, Py_NewRef(empty));
            } else {
                if (p >= rend) {
                    PyErr_SetString(CorruptRecordError, "corrupt record: fields run past the record length");
                    goto fail;
                }
                if (hdrs == NULL) {
                    if (!(empty = PyTuple_New(0)) || !(hdrs = PyList_New(total)))
                        goto fail;
                    for (Py_ssize_t j = 0; j < i; j++)
                        PyList_SET_ITEM(hdrs, j, Py_NewRef(empty));
                }
                if (!(o = read_headers(d, rend, &p)))
                    goto fail;
                PyList_SET_ITEM(hdrs, i, o);
                if (p != rend) {
                    PyErr_SetString(CorruptRecordError, "corrupt record: record length does not match its fields");
                    goto fail;
                }
            }
        }
        if (p != n) {
            PyErr_Format(CorruptRecordError, "%zd bytes left over after %d records", n - p, (int)count);
            goto fail;
        }
        q = bend;
    }
    if (_PyBytes_Resize(&kdata, kused) || _PyBytes_Resize(&vdata, vused))
        goto fail;
    if (knulls == 0)
        Py_SETREF(kvalid, Py_NewRef(Py_None));
    if (vnulls == 0)
        Py_SETREF(vvalid, Py_NewRef(Py_None));
    if (hdrs == NULL)
        hdrs = Py_NewRef(Py_None);
    Py_XDECREF(empty);
    PyBuffer_Release(&buf);
    return Py_BuildValue("(nnLiNNNNNnNNNnN)", run_end, nbatches, (long long)next_offset, ttype, ods, tss, kdata,
                         koffs, kvalid, knulls, vdata, voffs, vvalid, vnulls, hdrs);

fail:
    Py_XDECREF(ods);
    Py_XDECREF(tss);
    Py_XDECREF(kdata);
    Py_XDECREF(koffs);
    Py_XDECREF(kvalid);
    Py_XDECREF(vdata);
    Py_XDECREF(voffs);
    Py_XDECREF(vvalid);
    Py_XDECREF(hdrs);
    Py_XDECREF(empty);
    PyBuffer_Release(&buf);
    return NULL;
}

/* ---------------------------------------------------------------- append_record (producer) */

/* Zigzag varint of v into out; returns the bytes written (at most 10). */
static inline Py_ssize_t
write_varint(unsigned char *out, int64_t v)
{
    uint64_t z = ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
    Py_ssize_t i = 0;
    while (z >= 0x80) {
        out[i++] = (unsigned char)(z | 0x80);
        z >>= 7;
    }
    out[i++] = (unsigned char)z;
    return i;
}

PyDoc_STRVAR(append_record_doc,
"append_record(buf, capacity, timestamp_delta, offset_delta, key, value) -> bool\n"
"--\n\n"
"Append one record without headers to the bytearray ``buf`` (a batch being built) unless\n"
"that would make it longer than ``capacity``; True if appended. ``key`` None or bytes-like,\n"
"``value`` bytes-like (TypeError otherwise). The bytes are those of\n"
"client.records.record's encoder: length, attributes 0, timestampDelta, offsetDelta, key,\n"
"value, 0 headers, every integer a zigzag varint.");

static PyObject *
append_record(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 6) {
        PyErr_SetString(PyExc_TypeError, "append_record takes 6 arguments");
        return NULL;
    }
    PyObject *buf = args[0], *key = args[4], *value = args[5];
    if (!PyByteArray_Check(buf)) {
        PyErr_SetString(PyExc_TypeError, "append_record: buf must be a bytearray");
        return NULL;
    }
    Py_ssize_t capacity = PyLong_AsSsize_t(args[1]);
    long long tsd = PyLong_AsLongLong(args[2]), od = PyLong_AsLongLong(args[3]);
    if (PyErr_Occurred())
        return NULL;
    Py_buffer kb = {0}, vb;
    int has_key = key != Py_None;
    if (has_key && PyObject_GetBuffer(key, &kb, PyBUF_SIMPLE))
        return NULL;
    if (PyObject_GetBuffer(value, &vb, PyBUF_SIMPLE)) {
        if (has_key)
            PyBuffer_Release(&kb);
        return NULL;
    }
    unsigned char head[40], tail[11];
    Py_ssize_t h = 0, t = 0;
    head[h++] = 0; /* attributes */
    h += write_varint(head + h, tsd);
    h += write_varint(head + h, od);
    h += write_varint(head + h, has_key ? (int64_t)kb.len : -1);
    t += write_varint(tail + t, (int64_t)vb.len);
    Py_ssize_t body = h + (has_key ? kb.len : 0) + t + vb.len + 1; /* + the 0 headers count */
    unsigned char lenv[10];
    Py_ssize_t l = write_varint(lenv, (int64_t)body);
    Py_ssize_t old = PyByteArray_GET_SIZE(buf);
    PyObject *result = Py_False;
    if (old + l + body <= capacity) {
        if (PyByteArray_Resize(buf, old + l + body) == 0) {
            unsigned char *o = (unsigned char *)PyByteArray_AS_STRING(buf) + old;
            memcpy(o, lenv, (size_t)l);
            o += l;
            memcpy(o, head, (size_t)h);
            o += h;
            if (has_key) {
                memcpy(o, kb.buf, (size_t)kb.len);
                o += kb.len;
            }
            memcpy(o, tail, (size_t)t);
            o += t;
            memcpy(o, vb.buf, (size_t)vb.len);
            o[vb.len] = 0;
            result = Py_True;
        } else {
            result = NULL;
        }
    }
    if (has_key)
        PyBuffer_Release(&kb);
    PyBuffer_Release(&vb);
    return result == NULL ? NULL : Py_NewRef(result);
}

static PyMethodDef methods[] = {
    {"decode_lists", (PyCFunction)(void (*)(void))decode_lists, METH_VARARGS | METH_KEYWORDS, decode_lists_doc},
    {"decode_columns", (PyCFunction)(void (*)(void))decode_columns, METH_VARARGS | METH_KEYWORDS,
     decode_columns_doc},
    {"decode_columns_run", (PyCFunction)(void (*)(void))decode_columns_run, METH_VARARGS | METH_KEYWORDS,
     decode_columns_run_doc},
    {"decode_records", (PyCFunction)(void (*)(void))decode_records, METH_VARARGS | METH_KEYWORDS,
     decode_records_doc},
    {"append_record", (PyCFunction)(void (*)(void))append_record, METH_FASTCALL, append_record_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "client.records._codec",
    "C encoder and decoders of RecordBatch v2 records (see client/records/_codec.c).", -1, methods,
};

PyMODINIT_FUNC
PyInit__codec(void)
{
    PyObject *batch = PyImport_ImportModule("client.records.batch");
    if (batch == NULL)
        return NULL;
    CorruptRecordError = PyObject_GetAttrString(batch, "CorruptRecordError");
    Py_DECREF(batch);
    if (CorruptRecordError == NULL)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) {
        Py_CLEAR(CorruptRecordError);
        return NULL;
    }
    return m;
}
