/* The protobuf decoder in C: storage/protobuf/native.py compiles the message plans into
 * the tables this module interprets; it walks the wire format and builds the same JSON
 * objects (dicts, lists, str, int, float, bool, None) as storage/protobuf/codegen.py.
 *
 * The contract: for any input it either returns exactly what the Python decoder returns
 * (and appends the same Report entries) or it returns None ("defer"), after which the
 * caller runs the Python decoder, which gives the answer or the error. So every shape the
 * C side does not reproduce bit for bit — malformed or truncated data, over-long varints,
 * a singular message repeated (merged by concatenation), a wrong wire type, nesting deeper
 * than MAX_DEPTH, any Python error — defers, and only canonical, well-formed data takes
 * the fast path. Rare special messages (Duration, the list wrappers, non-canonical Times
 * and Quantities) call the message's Python decoder from here. Map values that codegen
 * leaves to the interpreter (converter.decode: apiextensions' unions in `dependencies`)
 * are walked under its rules ("strict": where the two differ, deferred).
 *
 * Every read is bounds-checked against the end of the enclosing message; lengths are
 * compared as unsigned 64-bit integers with the bytes left, never added to a pointer.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* storage.protobuf.plans' kinds */
enum { K_STRING, K_BYTES, K_BOOL, K_INT32, K_INT64, K_MESSAGE, K_MAP, K_DOUBLE };
/* message modes (native.py) */
enum { M_NORMAL, M_TIME, M_MICROTIME, M_QUANTITY, M_INTORSTRING, M_RAW, M_CALLBACK,
       M_SCHEMA_OR_BOOL, M_SCHEMA_OR_ARRAY, M_SCHEMA_OR_STRINGS };
/* field flags */
enum { F_REPEATED = 1, F_POINTER = 2, F_OMITEMPTY = 4, F_INLINE = 8 };
/* how a map's values decode (codegen's map_ss, map_sq, map_msg, ref_map) */
enum { MV_STRING, MV_QUANTITY, MV_MESSAGE, MV_SCALAR, MV_REFERENCE };

#define MAX_DEPTH 100
#define ZERO_TIME (-62135596800LL)   /* 0001-01-01T00:00:00Z */
#define MAX_TIME 253402300799LL      /* 9999-12-31T23:59:59Z: Python's datetime's range */

typedef struct {
    uint32_t number;
    uint8_t kind, wire, flags, mapmode, mapkind;
    int32_t sub; /* message index (MESSAGE, or a map's message values), else -1 */
    PyObject *key; /* JSON name */
} FieldT;

typedef struct {
    int mode;
    int32_t schema; /* the JSONSchemaProps of apiextensions' unions (M_SCHEMA_OR_*) */
    PyObject *name;   /* full proto name: the key of the Python decoders' table */
    PyObject *hashed; /* "<name>#": unknown fields are reported as "<name>#<number>" */
    FieldT *fields;
    Py_ssize_t nfields;
    int16_t *bynum; /* field number -> index into fields, -1 */
    uint32_t maxnum;
} MsgT;

typedef struct {
    PyObject_HEAD
    MsgT *msgs;
    Py_ssize_t nmsgs;
    PyObject *kinds;    /* b"apiVersion\0kind" -> (message index, apiVersion, kind) */
    PyObject *decoders; /* the Python decoders by message name (codegen's table) */
    PyObject *report_type;
    PyObject *loads; /* orjson.loads */
    PyObject *reference; /* converter.decode(plan, data, report): special map values */
    PyObject *plans;     /* the message plans by name */
    PyObject *fallback;  /* decode_or_fallback's Python decoder: fallback(data, report) */
    PyObject *s_apiversion, *s_kind, *s_unknown_fields, *s_zero;
} Decoder;

/* An occurrence of a field in the message being decoded. */
typedef struct {
    uint32_t start, len; /* absolute offsets into the input (wire types 1, 2) */
    uint64_t val;        /* wire type 0 */
    int32_t next;
    uint8_t packed;
} Occ;

typedef struct {
    int32_t head, tail, count;
} FState;

#define LOCAL 128 /* occurrences and field states on the stack before the heap */

typedef struct {
    Decoder *d;
    const uint8_t *buf;
    Occ *occ;
    size_t nocc, capocc;
    FState *fs;
    size_t nfs, capfs;
    PyObject *report; /* borrowed (the caller's) or owned (made here), NULL until needed */
    int owns_report;
    PyObject *unknown; /* report.unknown_fields, owned */
    Py_ssize_t unknown0;
    int depth;
    int strict; /* > 0: under converter.decode's semantics (see dec_reference) */
    Occ occ_local[LOCAL]; /* last: ctx_init clears what comes before */
    FState fs_local[LOCAL];
} Ctx;

/* ------------------------------------------------------------------ wire */

/* A varint at *pos; -1 when truncated, longer than 10 bytes or above 2**64 - 1 (the
 * Python reader keeps such values as big ints: deferred). */
static inline int rd_varint(const uint8_t *p, size_t n, size_t *pos, uint64_t *out) {
    size_t i = *pos;
    uint64_t r = 0;
    for (int shift = 0;; shift += 7) {
        if (i >= n) return -1;
        uint8_t b = p[i++];
        if (shift == 63) {
            if (b > 1) return -1;
            r |= (uint64_t)b << 63;
            break;
        }
        r |= (uint64_t)(b & 0x7f) << shift;
        if (b < 0x80) break;
    }
    *pos = i;
    *out = r;
    return 0;
}

/* Skips the value of an unknown field; -1 if malformed. */
static int skip_value(const uint8_t *p, size_t n, size_t *pos, unsigned wt) {
    uint64_t v;
    switch (wt) {
    case 0:
        return rd_varint(p, n, pos, &v);
    case 2:
        if (rd_varint(p, n, pos, &v) < 0 || v > n - *pos) return -1;
        *pos += (size_t)v;
        return 0;
    case 1:
    case 5:
        if ((wt == 1 ? 8u : 4u) > n - *pos) return -1;
        *pos += wt == 1 ? 8 : 4;
        return 0;
    default:
        return -1;
    }
}

/* The fields 1..3 of a small flat message (varints and length-delimited only, the last
 * occurrence wins, other numbers skipped), as wire.last_fields reads them: -1 if
 * malformed. kind[i]: 0 absent, 1 varint, 2 bytes. */
typedef struct {
    int kind[4];
    uint64_t val[4];
    size_t start[4], len[4];
} Flat;

static int flat_fields(const uint8_t *p, size_t n, Flat *f) {
    size_t pos = 0;
    memset(f, 0, sizeof *f);
    while (pos < n) {
        uint64_t tag, v;
        if (rd_varint(p, n, &pos, &tag) < 0) return -1;
        unsigned wt = tag & 7;
        uint64_t num = tag >> 3;
        if (wt == 0) {
            if (rd_varint(p, n, &pos, &v) < 0) return -1;
            if (num <= 3) { f->kind[num] = 1; f->val[num] = v; }
        } else if (wt == 2) {
            if (rd_varint(p, n, &pos, &v) < 0 || v > n - pos) return -1;
            if (num <= 3) { f->kind[num] = 2; f->start[num] = pos; f->len[num] = (size_t)v; }
            pos += (size_t)v;
        } else {
            return -1;
        }
    }
    return 0;
}

/* ------------------------------------------------------------------ values */

static PyObject *b64(const uint8_t *p, size_t n) {
    static const char A[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    if (n > (size_t)(PY_SSIZE_T_MAX / 4 - 2)) return NULL;
    Py_ssize_t size = (Py_ssize_t)((n + 2) / 3 * 4);
    PyObject *s = PyUnicode_New(size, 127);
    if (s == NULL) return NULL;
    Py_UCS1 *o = PyUnicode_1BYTE_DATA(s);
    size_t i = 0;
    for (; i + 2 < n; i += 3) {
        uint32_t v = ((uint32_t)p[i] << 16) | ((uint32_t)p[i + 1] << 8) | p[i + 2];
        *o++ = A[v >> 18]; *o++ = A[(v >> 12) & 63]; *o++ = A[(v >> 6) & 63]; *o++ = A[v & 63];
    }
    if (i + 1 == n) {
        uint32_t v = (uint32_t)p[i] << 16;
        *o++ = A[v >> 18]; *o++ = A[(v >> 12) & 63]; *o++ = '='; *o++ = '=';
    } else if (i + 2 == n) {
        uint32_t v = ((uint32_t)p[i] << 16) | ((uint32_t)p[i + 1] << 8);
        *o++ = A[v >> 18]; *o++ = A[(v >> 12) & 63]; *o++ = A[(v >> 6) & 63]; *o++ = '=';
    }
    return s;
}

static inline PyObject *text(const uint8_t *p, size_t n) {
    return PyUnicode_DecodeUTF8((const char *)p, (Py_ssize_t)n, "replace");
}

/* converter.unpack_double: integral values below 1e21 as ints, as encoding/json prints. */
static PyObject *f64(const uint8_t *p) {
    uint64_t bits = 0;
    for (int i = 7; i >= 0; i--) bits = (bits << 8) | p[i];
    double v;
    memcpy(&v, &bits, sizeof v);
    if (isfinite(v) && floor(v) == v && fabs(v) < 1e21) return PyLong_FromDouble(v);
    return PyFloat_FromDouble(v);
}

static PyObject *scalar_varint(int kind, uint64_t v) {
    switch (kind) {
    case K_INT32: return PyLong_FromLong((long)(int32_t)(uint32_t)v);
    case K_INT64: return PyLong_FromLongLong((long long)(int64_t)v);
    default: return PyBool_FromLong(v != 0);
    }
}

static void digits(char *out, unsigned value, int n) {
    for (int i = n - 1; i >= 0; i--, value /= 10) out[i] = (char)('0' + value % 10);
}

/* "YYYY-MM-DDTHH:MM:SS" (19 characters) of seconds since the epoch (days to a civil
 * date: H. Hinnant's algorithm); 0 when outside years 1..9999 (Python's datetime). */
static int format_seconds(int64_t seconds, char *out) {
    if (seconds < ZERO_TIME || seconds > MAX_TIME) return 0;
    int64_t days = seconds / 86400, rest = seconds % 86400;
    if (rest < 0) { rest += 86400; days -= 1; }
    int64_t z = days + 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    unsigned doe = (unsigned)(z - era * 146097);
    unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    unsigned mp = (5 * doy + 2) / 153;
    unsigned day = doy - (153 * mp + 2) / 5 + 1;
    unsigned month = mp < 10 ? mp + 3 : mp - 9;
    unsigned year = (unsigned)((int64_t)yoe + era * 400 + (month <= 2));
    digits(out, year, 4);
    out[4] = '-';
    digits(out + 5, month, 2);
    out[7] = '-';
    digits(out + 8, day, 2);
    out[10] = 'T';
    digits(out + 11, (unsigned)(rest / 3600), 2);
    out[13] = ':';
    digits(out + 14, (unsigned)(rest % 3600 / 60), 2);
    out[16] = ':';
    digits(out + 17, (unsigned)(rest % 60), 2);
    return 1;
}

static PyObject *ascii(const char *p, size_t n) {
    PyObject *s = PyUnicode_New((Py_ssize_t)n, 127);
    if (s != NULL) memcpy(PyUnicode_1BYTE_DATA(s), p, n);
    return s;
}

/* ------------------------------------------------------------------ context */

/* Room for `need` items in *arr (the context's stack array `local` at first). */
static int grow(void **arr, size_t *cap, size_t need, size_t item, void *local) {
    if (need <= *cap) return 0;
    size_t cap2 = *cap;
    while (cap2 < need) {
        if (cap2 > ((size_t)1 << 40) / item) return -1;
        cap2 *= 2;
    }
    void *p = *arr == local ? PyMem_Malloc(cap2 * item) : PyMem_Realloc(*arr, cap2 * item);
    if (p == NULL) return -1;
    if (*arr == local) memcpy(p, local, *cap * item);
    *arr = p;
    *cap = cap2;
    return 0;
}

/* report.unknown_fields, the report made on first need when the caller gave none. */
static PyObject *unknown_list(Ctx *c) {
    if (c->unknown != NULL) return c->unknown;
    if (c->report == NULL) {
        c->report = PyObject_CallNoArgs(c->d->report_type);
        if (c->report == NULL) return NULL;
        c->owns_report = 1;
    }
    PyObject *list = PyObject_GetAttr(c->report, c->d->s_unknown_fields);
    if (list == NULL) return NULL;
    if (!PyList_Check(list)) { Py_DECREF(list); return NULL; }
    c->unknown = list;
    c->unknown0 = PyList_GET_SIZE(list);
    return list;
}

static int report_unknown(Ctx *c, MsgT *m, uint64_t number) {
    PyObject *list = unknown_list(c);
    if (list == NULL) return -1;
    PyObject *s = PyUnicode_FromFormat("%U%llu", m->hashed, (unsigned long long)number);
    if (s == NULL) return -1;
    int rc = PyList_Append(list, s);
    Py_DECREF(s);
    return rc;
}

/* The message's Python decoder on these bytes (it appends to the same report); under
 * the interpreter's semantics (strict) there is none to call: deferred. */
static PyObject *callback(Ctx *c, MsgT *m, const uint8_t *p, size_t n) {
    if (c->strict || unknown_list(c) == NULL) return NULL;
    PyObject *fn = PyObject_GetItem(c->d->decoders, m->name);
    if (fn == NULL) return NULL;
    PyObject *data = PyBytes_FromStringAndSize((const char *)p, (Py_ssize_t)n);
    PyObject *out = NULL;
    if (data != NULL) {
        out = PyObject_CallFunctionObjArgs(fn, data, c->report, NULL);
        Py_DECREF(data);
    }
    Py_DECREF(fn);
    return out;
}

/* ------------------------------------------------------------------ specials */

static PyObject *dec_time(Ctx *c, MsgT *m, const uint8_t *p, size_t n) {
    if (n == 0) Py_RETURN_NONE;
    uint64_t sec = 0, nanos = 0;
    size_t pos = 1;
    int micro = m->mode == M_MICROTIME;
    /* codegen._time reads the seconds of "08 <seconds> ..." and ignores the rest;
     * MicroTime (converter) is taken here only as exactly "08 <s> [10 <nanos>]" */
    if (p[0] != 0x08 || rd_varint(p, n, &pos, &sec) < 0) return callback(c, m, p, n);
    /* MicroTime, and Time under the interpreter, which reads every field: the exact shape */
    int exact = micro || c->strict;
    if (exact && pos < n) {
        if (p[pos] != 0x10) return callback(c, m, p, n);
        pos++;
        if (rd_varint(p, n, &pos, &nanos) < 0 || pos != n) return callback(c, m, p, n);
        if (!micro) nanos = 0;
    }
    int64_t seconds = (int64_t)sec;
    if (seconds == ZERO_TIME && (!micro || nanos == 0)) Py_RETURN_NONE;
    char buf[64];
    if (!format_seconds(seconds, buf)) return callback(c, m, p, n);
    if (!micro) {
        buf[19] = 'Z';
        return ascii(buf, 20);
    }
    uint64_t micros = nanos / 1000;
    if (micros > 999999) /* printed whole, as Python's {:06d} */
        return PyUnicode_FromFormat("%.19s.%06lluZ", buf, (unsigned long long)micros);
    buf[19] = '.';
    digits(buf + 20, (unsigned)micros, 6);
    buf[26] = 'Z';
    return ascii(buf, 27);
}

static PyObject *dec_quantity(Ctx *c, MsgT *m, const uint8_t *p, size_t n) {
    if (n == 0) return Py_NewRef(c->d->s_zero);
    if (n > 1 && p[0] == 0x0A && p[1] < 128 && n == (size_t)p[1] + 2) {
        if (n == 2) return Py_NewRef(c->d->s_zero);
        PyObject *s = PyUnicode_DecodeUTF8((const char *)p + 2, (Py_ssize_t)(n - 2), NULL);
        if (s != NULL) return s;
        PyErr_Clear();
    }
    return callback(c, m, p, n);
}

static PyObject *dec_intorstring(Ctx *c, MsgT *m, const uint8_t *p, size_t n) {
    Flat f;
    if (flat_fields(p, n, &f) < 0 || f.kind[1] == 2) return callback(c, m, p, n);
    if (f.kind[1] == 1 && f.val[1] == 1) {
        if (f.kind[3] == 1) return callback(c, m, p, n);
        return f.kind[3] ? text(p + f.start[3], f.len[3]) : PyUnicode_New(0, 0);
    }
    if (f.kind[2] == 2) return callback(c, m, p, n);
    return PyLong_FromLong((long)(int32_t)(uint32_t)f.val[2]);
}

/* FieldsV1, RawExtension: "0a <len> <JSON>" parsed by orjson (codegen._raw). */
static PyObject *dec_raw(Ctx *c, MsgT *m, const uint8_t *p, size_t n) {
    if (n == 0) Py_RETURN_NONE; /* no raw field: null (an absent value RawExtension) */
    size_t pos = 1;
    uint64_t size;
    if (n > 2 && p[0] == 0x0A && rd_varint(p, n, &pos, &size) == 0 && size == n - pos) {
        PyObject *view = PyMemoryView_FromMemory((char *)p + pos, (Py_ssize_t)size, PyBUF_READ);
        if (view == NULL) return NULL;
        PyObject *out = PyObject_CallOneArg(c->d->loads, view);
        Py_DECREF(view);
        if (out != NULL) return out;
        if (!PyErr_ExceptionMatches(PyExc_ValueError)) return NULL; /* JSONDecodeError */
        PyErr_Clear();
    }
    return callback(c, m, p, n);
}

/* ------------------------------------------------------------------ messages */

static PyObject *dec_msg(Ctx *c, int32_t mi, const uint8_t *p, size_t n);

/* apiextensions' JSONSchemaPropsOr{Bool,Array,StringArray} as codegen._union_decoder:
 * OrBool {allows = 1, schema = 2}: the schema if there is one, else allows; the others
 * {schema = 1, items = 2}: the items if any (schemas, or strings), else the schema or
 * null. Only length-delimited fields are taken here (OrBool: and allows' varint). */
static PyObject *dec_union(Ctx *c, MsgT *m, const uint8_t *p, size_t n) {
    if (c->strict) {
        /* the interpreter (converter._decode_union) reports other fields and merges a
         * repeated schema, where codegen ignores them and keeps the last: deferred */
        size_t pos = 0;
        int ones = 0, twos = 0;
        while (pos < n) {
            uint64_t tag;
            if (rd_varint(p, n, &pos, &tag) < 0 || skip_value(p, n, &pos, tag & 7) < 0)
                return NULL;
            ones += tag >> 3 == 1;
            twos += tag >> 3 == 2;
            if ((tag >> 3 != 1 && tag >> 3 != 2) || ones > 1 ||
                (m->mode == M_SCHEMA_OR_BOOL && twos > 1))
                return NULL;
        }
    }
    if (m->mode == M_SCHEMA_OR_BOOL) {
        Flat f;
        /* codegen ignores allows when there is a schema; the interpreter checks its type */
        if (flat_fields(p, n, &f) < 0 || f.kind[2] == 1 ||
            ((!f.kind[2] || c->strict) && f.kind[1] == 2))
            return callback(c, m, p, n);
        if (f.kind[2]) return dec_msg(c, m->schema, p + f.start[2], f.len[2]);
        return PyBool_FromLong(f.val[1] != 0);
    }
    /* first the shape (length-delimited fields only), before any item is decoded: a
     * callback after items that reported unknown fields would report them twice */
    size_t pos = 0, start1 = 0, len1 = 0;
    int has1 = 0, has2 = 0;
    while (pos < n) {
        uint64_t tag, v;
        if (rd_varint(p, n, &pos, &tag) < 0 || (tag & 7) != 2 ||
            rd_varint(p, n, &pos, &v) < 0 || v > n - pos)
            return callback(c, m, p, n);
        if (tag >> 3 == 1) { has1 = 1; start1 = pos; len1 = (size_t)v; }
        has2 |= tag >> 3 == 2;
        pos += (size_t)v;
    }
    PyObject *items = has2 ? PyList_New(0) : NULL;
    if (has2 && items == NULL) return NULL;
    for (pos = 0; has2 && pos < n;) {
        uint64_t tag, v;
        if (rd_varint(p, n, &pos, &tag) < 0 || rd_varint(p, n, &pos, &v) < 0) { /* checked */
            Py_DECREF(items);
            return NULL;
        }
        if (tag >> 3 == 2) {
            PyObject *x = m->mode == M_SCHEMA_OR_STRINGS ? text(p + pos, (size_t)v)
                                                         : dec_msg(c, m->schema, p + pos, (size_t)v);
            if (x == NULL || PyList_Append(items, x) < 0) {
                Py_XDECREF(x);
                Py_DECREF(items);
                return NULL;
            }
            Py_DECREF(x);
        }
        pos += (size_t)v;
    }
    if (items != NULL) return items;
    if (has1) return dec_msg(c, m->schema, p + start1, len1);
    Py_RETURN_NONE;
}

static int dec_normal(Ctx *c, MsgT *m, const uint8_t *p, size_t n, PyObject *out);

/* Collects the occurrences of m's fields into c->fs[fs0..] (as codegen's parse loop);
 * -1 to defer. */
static int parse(Ctx *c, MsgT *m, const uint8_t *p, size_t n, size_t fs0) {
    size_t base = (size_t)(p - c->buf), pos = 0;
    while (pos < n) {
        uint64_t tag, v;
        if (rd_varint(p, n, &pos, &tag) < 0) return -1;
        uint64_t number = tag >> 3;
        unsigned wt = tag & 7;
        int fi = number <= m->maxnum ? m->bynum[number] : -1;
        if (fi < 0) {
            if (skip_value(p, n, &pos, wt) < 0 || report_unknown(c, m, number) < 0) return -1;
            continue;
        }
        FieldT *f = &m->fields[fi];
        uint8_t packed = 0;
        Occ o = {0, 0, 0, -1, 0};
        if (wt != f->wire) {
            /* packed repeated ints (Go accepts them); doubles defer (codegen fails) */
            if (c->strict || /* the interpreter keeps an empty run, codegen does not */
                !(wt == 2 && (f->flags & F_REPEATED) && f->kind != K_DOUBLE &&
                  (f->kind == K_BOOL || f->kind == K_INT32 || f->kind == K_INT64)))
                return -1;
            packed = 1;
        }
        if (wt == 0) {
            if (rd_varint(p, n, &pos, &v) < 0) return -1;
            o.val = v;
        } else if (wt == 2) {
            if (rd_varint(p, n, &pos, &v) < 0 || v > n - pos) return -1;
            o.start = (uint32_t)(base + pos);
            o.len = (uint32_t)v;
            pos += (size_t)v;
        } else if (wt == 1) { /* a double */
            if (8 > n - pos) return -1;
            o.start = (uint32_t)(base + pos);
            o.len = 8;
            pos += 8;
        } else {
            return -1;
        }
        o.packed = packed;
        if (grow((void **)&c->occ, &c->capocc, c->nocc + 1, sizeof(Occ), c->occ_local) < 0)
            return -1;
        int32_t oi = (int32_t)c->nocc++;
        c->occ[oi] = o;
        FState *s = &c->fs[fs0 + fi];
        if (s->head < 0) s->head = oi; else c->occ[s->tail].next = oi;
        s->tail = oi;
        s->count++;
    }
    return 0;
}

static PyObject *one_scalar(FieldT *f, const uint8_t *buf, Occ *o) {
    switch (f->kind) {
    case K_STRING: return text(buf + o->start, o->len);
    case K_BYTES: return b64(buf + o->start, o->len);
    case K_DOUBLE: return f64(buf + o->start);
    default: return scalar_varint(f->kind, o->val);
    }
}

/* A repeated non-map field's list, packed runs expanded. */
static PyObject *repeated(Ctx *c, FieldT *f, int32_t oi) {
    PyObject *list = PyList_New(0);
    if (list == NULL) return NULL;
    while (oi >= 0) {
        Occ o = c->occ[oi]; /* a copy: a nested decode may move the array */
        oi = o.next;
        if (o.packed) {
            const uint8_t *q = c->buf + o.start;
            size_t pos = 0;
            while (pos < o.len) {
                uint64_t v;
                if (rd_varint(q, o.len, &pos, &v) < 0) goto fail;
                PyObject *x = scalar_varint(f->kind, v);
                if (x == NULL || PyList_Append(list, x) < 0) { Py_XDECREF(x); goto fail; }
                Py_DECREF(x);
            }
            continue;
        }
        PyObject *x = f->kind == K_MESSAGE ? dec_msg(c, f->sub, c->buf + o.start, o.len)
                                           : one_scalar(f, c->buf, &o);
        if (x == NULL || PyList_Append(list, x) < 0) { Py_XDECREF(x); goto fail; }
        Py_DECREF(x);
    }
    return list;
fail:
    Py_DECREF(list);
    return NULL;
}

/* One map entry: codegen._entry (fields 1 and 2, length-delimited only) or, for scalar
 * values, converter._decode_map's reading; -1 to defer. */
typedef struct {
    const uint8_t *key, *val;
    size_t klen, vlen;
    int has_val, val_is_int;
    uint64_t ival;
} Entry;

static int entry(const uint8_t *p, size_t n, int scalar, int strict, Entry *e) {
    size_t pos = 0;
    memset(e, 0, sizeof *e);
    e->key = e->val = p;
    while (pos < n) {
        uint64_t tag, v;
        if (rd_varint(p, n, &pos, &tag) < 0) return -1;
        uint64_t num = tag >> 3;
        if (strict && num != 1 && num != 2) return -1; /* where codegen and converter differ */
        if ((tag & 7) == 2) {
            if (rd_varint(p, n, &pos, &v) < 0 || v > n - pos) return -1;
            if (num == 1) { e->key = p + pos; e->klen = (size_t)v; }
            else if (num == 2 || scalar) {
                e->val = p + pos; e->vlen = (size_t)v; e->has_val = 1; e->val_is_int = 0;
            }
            pos += (size_t)v;
        } else if ((tag & 7) == 0 && scalar && num != 1) {
            if (rd_varint(p, n, &pos, &v) < 0) return -1;
            e->ival = v; e->has_val = 1; e->val_is_int = 1;
        } else {
            return -1;
        }
    }
    return 0;
}

static PyObject *map_value(Ctx *c, FieldT *f, Entry *e) {
    switch (f->mapmode) {
    case MV_STRING: return text(e->val, e->vlen);
    case MV_QUANTITY: return dec_quantity(c, &c->d->msgs[f->sub], e->val, e->vlen);
    case MV_MESSAGE: return dec_msg(c, f->sub, e->val, e->vlen);
    case MV_SCALAR: /* converter._decode_map: bytes or varint values, checked against kind */
        if (f->mapkind == K_BYTES) {
            if (e->has_val && e->val_is_int) return NULL;
            return b64(e->val, e->has_val ? e->vlen : 0);
        }
        if (e->has_val && !e->val_is_int) return NULL;
        return scalar_varint(f->mapkind, e->has_val ? e->ival : 0);
    case MV_REFERENCE: { /* converter._decode_map: the interpreter's special decoding */
        if (e->has_val && e->val_is_int) return NULL;
        MsgT *sub = &c->d->msgs[f->sub];
        if (sub->mode >= M_SCHEMA_OR_BOOL) { /* apiextensions' unions: walked here */
            c->strict++;
            PyObject *out = dec_msg(c, f->sub, e->val, e->has_val ? e->vlen : 0);
            c->strict--;
            return out;
        }
        if (c->strict || unknown_list(c) == NULL) return NULL;
        PyObject *plan = PyObject_GetItem(c->d->plans, c->d->msgs[f->sub].name);
        if (plan == NULL) return NULL;
        PyObject *data = PyBytes_FromStringAndSize((const char *)e->val,
                                                   (Py_ssize_t)(e->has_val ? e->vlen : 0));
        PyObject *out = NULL;
        if (data != NULL)
            out = PyObject_CallFunctionObjArgs(c->d->reference, plan, data, c->report, NULL);
        Py_XDECREF(data);
        Py_DECREF(plan);
        return out;
    }
    }
    return NULL;
}

static PyObject *map(Ctx *c, FieldT *f, int32_t oi) {
    PyObject *out = PyDict_New();
    if (out == NULL) return NULL;
    while (oi >= 0) {
        Occ o = c->occ[oi];
        oi = o.next;
        Entry e;
        if (entry(c->buf + o.start, o.len, f->mapmode >= MV_SCALAR, c->strict, &e) < 0)
            goto fail;
        PyObject *k = text(e.key, e.klen);
        if (k == NULL) goto fail;
        PyObject *v = map_value(c, f, &e);
        if (v == NULL || PyDict_SetItem(out, k, v) < 0) {
            Py_DECREF(k); Py_XDECREF(v); goto fail;
        }
        Py_DECREF(k);
        Py_DECREF(v);
    }
    return out;
fail:
    Py_DECREF(out);
    return NULL;
}

static int set(PyObject *out, PyObject *key, PyObject *value) {
    if (value == NULL) return -1;
    int rc = PyDict_SetItem(out, key, value);
    Py_DECREF(value);
    return rc;
}

/* Whether a present scalar's JSON value is a zero that omitempty leaves out. */
static int zero_scalar(FieldT *f, const uint8_t *buf, Occ *o) {
    switch (f->kind) {
    case K_STRING: return o->len == 0;
    case K_INT32: return (uint32_t)o->val == 0;
    case K_DOUBLE: {
        uint64_t bits = 0;
        for (int i = 7; i >= 0; i--) bits = (bits << 8) | buf[o->start + i];
        double v;
        memcpy(&v, &bits, sizeof v);
        return v == 0.0;
    }
    default: return o->val == 0;
    }
}

/* codegen._emit for one field. */
static int emit(Ctx *c, FieldT *f, FState s, PyObject *out) {
    int present = s.count > 0;
    if (f->kind == K_MESSAGE && !(f->flags & F_REPEATED)) {
        if (s.count > 1) return -1; /* merged by concatenation: deferred */
        const uint8_t *q = present ? c->buf + c->occ[s.head].start : c->buf;
        size_t len = present ? c->occ[s.head].len : 0;
        if (f->flags & F_INLINE) {
            MsgT *sub = &c->d->msgs[f->sub];
            if (sub->mode == M_NORMAL) {
                if (c->depth >= MAX_DEPTH) return -1;
                c->depth++;
                int rc = dec_normal(c, sub, q, len, out);
                c->depth--;
                return rc;
            }
            PyObject *v = dec_msg(c, f->sub, q, len);
            if (v == NULL) return -1;
            int rc = PyDict_Check(v) ? PyDict_Update(out, v) : -1;
            Py_DECREF(v);
            return rc;
        }
        if ((f->flags & F_POINTER) && !present) return 0;
        return set(out, f->key, dec_msg(c, f->sub, q, len));
    }
    if (f->kind == K_MAP || (f->flags & F_REPEATED)) {
        if (f->flags & F_POINTER) {
            if (!present) return 0;
        } else if (f->flags & F_OMITEMPTY) {
            if (!present) return 0;
        } else if (!present) {
            return PyDict_SetItem(out, f->key, Py_None);
        }
        PyObject *v = f->kind == K_MAP ? map(c, f, s.head) : repeated(c, f, s.head);
        if (v == NULL) return -1;
        /* omitempty leaves out an empty list (a packed run of no values) */
        if ((f->flags & (F_OMITEMPTY | F_POINTER)) == F_OMITEMPTY && PyList_Check(v) &&
            PyList_GET_SIZE(v) == 0) {
            Py_DECREF(v);
            return 0;
        }
        return set(out, f->key, v);
    }
    Occ *o = present ? &c->occ[s.tail] : NULL;
    if (f->flags & F_POINTER) return present ? set(out, f->key, one_scalar(f, c->buf, o)) : 0;
    if (f->kind == K_BYTES) {
        if (f->flags & F_OMITEMPTY)
            return present && o->len ? set(out, f->key, one_scalar(f, c->buf, o)) : 0;
        return present ? set(out, f->key, one_scalar(f, c->buf, o))
                       : PyDict_SetItem(out, f->key, Py_None);
    }
    if (f->flags & F_OMITEMPTY) {
        if (!present || zero_scalar(f, c->buf, o)) return 0;
        return set(out, f->key, one_scalar(f, c->buf, o));
    }
    if (present) return set(out, f->key, one_scalar(f, c->buf, o));
    switch (f->kind) {
    case K_STRING: return set(out, f->key, PyUnicode_New(0, 0));
    case K_BOOL: return PyDict_SetItem(out, f->key, Py_False);
    default: return set(out, f->key, PyLong_FromLong(0));
    }
}

/* A normal message's members, set into out (its own dict, or the parent's when inline). */
static int dec_normal(Ctx *c, MsgT *m, const uint8_t *p, size_t n, PyObject *out) {
    size_t fs0 = c->nfs, occ0 = c->nocc;
    if (grow((void **)&c->fs, &c->capfs, fs0 + (size_t)m->nfields, sizeof(FState),
             c->fs_local) < 0)
        return -1;
    c->nfs += (size_t)m->nfields;
    for (Py_ssize_t i = 0; i < m->nfields; i++) c->fs[fs0 + i] = (FState){-1, -1, 0};
    int rc = parse(c, m, p, n, fs0);
    for (Py_ssize_t i = 0; rc == 0 && i < m->nfields; i++)
        rc = emit(c, &m->fields[i], c->fs[fs0 + i], out);
    c->nfs = fs0;
    c->nocc = occ0;
    return rc;
}

static PyObject *dec_msg(Ctx *c, int32_t mi, const uint8_t *p, size_t n) {
    MsgT *m = &c->d->msgs[mi];
    if (c->depth >= MAX_DEPTH) return NULL; /* deeper: Python's (it may run out itself) */
    c->depth++;
    PyObject *out = NULL;
    switch (m->mode) {
    case M_NORMAL:
        out = PyDict_New();
        if (out != NULL && dec_normal(c, m, p, n, out) < 0) Py_CLEAR(out);
        break;
    case M_TIME:
    case M_MICROTIME: out = dec_time(c, m, p, n); break;
    case M_QUANTITY: out = dec_quantity(c, m, p, n); break;
    case M_INTORSTRING: out = dec_intorstring(c, m, p, n); break;
    case M_RAW: out = dec_raw(c, m, p, n); break;
    case M_SCHEMA_OR_BOOL:
    case M_SCHEMA_OR_ARRAY:
    case M_SCHEMA_OR_STRINGS: out = dec_union(c, m, p, n); break;
    default: out = callback(c, m, p, n); break;
    }
    c->depth--;
    return out;
}

/* ------------------------------------------------------------------ entry points */

static void ctx_init(Ctx *c, Decoder *d, const uint8_t *buf, PyObject *report) {
    memset(c, 0, offsetof(Ctx, occ_local));
    c->occ = c->occ_local;
    c->fs = c->fs_local;
    c->capocc = c->capfs = LOCAL;
    c->d = d;
    c->buf = buf;
    c->report = report == Py_None ? NULL : report;
}

/* Finishes a decode: on deferral, takes back what was appended to the report. */
static PyObject *ctx_done(Ctx *c, PyObject *out) {
    if (out == NULL) {
        PyErr_Clear();
        if (c->unknown != NULL && !c->owns_report)
            PyList_SetSlice(c->unknown, c->unknown0, PY_SSIZE_T_MAX, NULL);
        PyErr_Clear();
        out = Py_NewRef(Py_None);
    }
    Py_XDECREF(c->unknown);
    if (c->owns_report) Py_DECREF(c->report);
    if (c->occ != c->occ_local) PyMem_Free(c->occ);
    if (c->fs != c->fs_local) PyMem_Free(c->fs);
    return out;
}

/* {"apiVersion": ..., "kind": ..., **message} */
static PyObject *decode_object(Ctx *c, Py_ssize_t mi, PyObject *av, PyObject *kind,
                               const uint8_t *p, size_t n) {
    Decoder *d = c->d;
    PyObject *out = PyDict_New();
    if (out == NULL) return NULL;
    if (PyDict_SetItem(out, d->s_apiversion, av) < 0 || PyDict_SetItem(out, d->s_kind, kind) < 0)
        goto fail;
    MsgT *m = &d->msgs[mi];
    if (m->mode == M_NORMAL) {
        if (dec_normal(c, m, p, n, out) < 0) goto fail;
    } else {
        PyObject *body = dec_msg(c, (int32_t)mi, p, n);
        int rc = body != NULL && PyDict_Check(body) ? PyDict_Update(out, body) : -1;
        Py_XDECREF(body);
        if (rc < 0) goto fail;
    }
    return out;
fail:
    Py_DECREF(out);
    return NULL;
}

static int get_bytes(PyObject *data, const uint8_t **p, size_t *n) {
    if (!PyBytes_Check(data)) return -1;
    *p = (const uint8_t *)PyBytes_AS_STRING(data);
    *n = (size_t)PyBytes_GET_SIZE(data);
    return *n < 0xFFFFFFF0u ? 0 : -1; /* offsets are 32-bit */
}

static const char MEDIA_TYPE[] = "application/vnd.kubernetes.protobuf";

/* An enveloped value (k8s\0 + runtime.Unknown) -> dict | None (defer). */
static PyObject *try_decode(Decoder *d, PyObject *data, PyObject *report) {
    const uint8_t *p;
    size_t n;
    Ctx c;
    ctx_init(&c, d, NULL, report);
    if (get_bytes(data, &p, &n) < 0 || n < 4 || memcmp(p, "k8s", 4) != 0)
        return ctx_done(&c, NULL);
    c.buf = p;
    Flat env, meta;
    if (flat_fields(p + 4, n - 4, &env) < 0 || env.kind[1] == 1 || env.kind[2] == 1 ||
        env.kind[3] == 1)
        return ctx_done(&c, NULL);
    /* contentEncoding (3) empty, contentType (4, read below) empty or protobuf's */
    if (env.kind[3] == 2 && env.len[3] != 0) return ctx_done(&c, NULL);
    const uint8_t *tm = p + 4 + env.start[1];
    if (flat_fields(tm, env.kind[1] ? env.len[1] : 0, &meta) < 0 || meta.kind[1] == 1 ||
        meta.kind[2] == 1)
        return ctx_done(&c, NULL);
    /* field 4 lies beyond Flat's 1..3: read it on its own */
    {
        size_t pos = 0, m = n - 4;
        const uint8_t *q = p + 4;
        while (pos < m) {
            uint64_t tag, v;
            if (rd_varint(q, m, &pos, &tag) < 0) return ctx_done(&c, NULL);
            if ((tag & 7) == 0) {
                if (rd_varint(q, m, &pos, &v) < 0 || tag >> 3 == 4) return ctx_done(&c, NULL);
                continue;
            }
            if (rd_varint(q, m, &pos, &v) < 0 || v > m - pos) return ctx_done(&c, NULL);
            if (tag >> 3 == 4 && v != 0 &&
                (v != sizeof MEDIA_TYPE - 1 || memcmp(q + pos, MEDIA_TYPE, (size_t)v) != 0))
                return ctx_done(&c, NULL);
            pos += (size_t)v;
        }
    }
    size_t avlen = meta.kind[1] ? meta.len[1] : 0, kindlen = meta.kind[2] ? meta.len[2] : 0;
    PyObject *key = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(avlen + 1 + kindlen));
    if (key == NULL) return ctx_done(&c, NULL);
    char *k = PyBytes_AS_STRING(key);
    memcpy(k, tm + meta.start[1], avlen);
    k[avlen] = 0;
    memcpy(k + avlen + 1, tm + meta.start[2], kindlen);
    PyObject *entry = PyDict_GetItemWithError(d->kinds, key); /* borrowed */
    Py_DECREF(key);
    if (entry == NULL || !PyTuple_Check(entry) || PyTuple_GET_SIZE(entry) != 3)
        return ctx_done(&c, NULL);
    Py_ssize_t mi = PyLong_AsSsize_t(PyTuple_GET_ITEM(entry, 0));
    if (mi < 0 || mi >= d->nmsgs) return ctx_done(&c, NULL);
    const uint8_t *raw = p + 4 + env.start[2];
    size_t rawlen = env.kind[2] ? env.len[2] : 0;
    return ctx_done(&c, decode_object(&c, mi, PyTuple_GET_ITEM(entry, 1),
                                      PyTuple_GET_ITEM(entry, 2), raw, rawlen));
}

/* decode(data, report) -> dict | None: None means "ask the Python decoder". */
static PyObject *Decoder_decode(Decoder *d, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "decode(data, report)");
        return NULL;
    }
    return try_decode(d, args[0], args[1]);
}

/* decode_or_fallback(data, report=None) -> dict: the fallback answers what C defers
 * (Serializer.decode is this method: no Python frame on the fast path). */
static PyObject *Decoder_decode_or_fallback(Decoder *d, PyObject *const *args,
                                            Py_ssize_t nargs) {
    if (nargs < 1 || nargs > 2 || d->fallback == NULL) {
        PyErr_SetString(PyExc_TypeError, "decode_or_fallback(data, report=None)");
        return NULL;
    }
    PyObject *report = nargs == 2 ? args[1] : Py_None;
    PyObject *out = try_decode(d, args[0], report);
    if (out != Py_None) return out;
    Py_DECREF(out);
    return PyObject_CallFunctionObjArgs(d->fallback, args[0], report, NULL);
}

/* decode_raw(index, apiVersion, kind, raw, report) -> dict | None: a message of a kind. */
static PyObject *Decoder_decode_raw(Decoder *d, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError, "decode_raw(index, api_version, kind, raw, report)");
        return NULL;
    }
    Py_ssize_t mi = PyLong_AsSsize_t(args[0]);
    if (mi == -1 && PyErr_Occurred()) return NULL;
    const uint8_t *p;
    size_t n;
    Ctx c;
    ctx_init(&c, d, NULL, args[4]);
    if (mi < 0 || mi >= d->nmsgs || get_bytes(args[3], &p, &n) < 0) return ctx_done(&c, NULL);
    c.buf = p;
    return ctx_done(&c, decode_object(&c, mi, args[1], args[2], p, n));
}

/* ------------------------------------------------------------------ the tables */

static void free_tables(Decoder *d) {
    for (Py_ssize_t i = 0; i < d->nmsgs; i++) {
        MsgT *m = &d->msgs[i];
        for (Py_ssize_t j = 0; j < m->nfields; j++) Py_XDECREF(m->fields[j].key);
        PyMem_Free(m->fields);
        PyMem_Free(m->bynum);
        Py_XDECREF(m->name);
        Py_XDECREF(m->hashed);
    }
    PyMem_Free(d->msgs);
    d->msgs = NULL;
    d->nmsgs = 0;
}

/* messages: [(name, mode, schema, ((number, kind, wire, flags, sub, mapmode, mapkind,
 * json), ...))] */
static int load_message(Decoder *d, MsgT *m, PyObject *spec) {
    PyObject *name, *fields;
    int mode, schema;
    if (!PyArg_ParseTuple(spec, "UiiO!", &name, &mode, &schema, &PyTuple_Type, &fields))
        return -1;
    if (mode >= M_SCHEMA_OR_BOOL && (schema < 0 || schema >= d->nmsgs)) {
        PyErr_SetString(PyExc_ValueError, "a union without its schema");
        return -1;
    }
    m->mode = mode;
    m->schema = schema;
    m->name = Py_NewRef(name);
    m->hashed = PyUnicode_FromFormat("%U#", name);
    if (m->hashed == NULL) return -1;
    Py_ssize_t nf = PyTuple_GET_SIZE(fields);
    m->fields = PyMem_Calloc((size_t)nf + 1, sizeof(FieldT));
    if (m->fields == NULL) return -1;
    m->nfields = nf;
    uint32_t maxnum = 0;
    for (Py_ssize_t j = 0; j < nf; j++) {
        FieldT *f = &m->fields[j];
        unsigned int number;
        unsigned char kind, wire, flags, mapmode, mapkind;
        int sub;
        PyObject *key;
        if (!PyArg_ParseTuple(PyTuple_GET_ITEM(fields, j), "IbbbibbU", &number, &kind, &wire,
                              &flags, &sub, &mapmode, &mapkind, &key))
            return -1;
        if (number == 0 || number > 4096 || (sub < -1) || sub >= d->nmsgs ||
            mapmode > MV_REFERENCE ||
            ((kind == K_MESSAGE || (kind == K_MAP && mapmode != MV_STRING && mapmode != MV_SCALAR)) &&
             sub < 0)) {
            PyErr_SetString(PyExc_ValueError, "bad field table");
            return -1;
        }
        *f = (FieldT){number, kind, wire, flags, mapmode, mapkind, sub, Py_NewRef(key)};
        PyUnicode_InternInPlace(&f->key);
        if (number > maxnum) maxnum = number;
    }
    m->maxnum = maxnum;
    m->bynum = PyMem_Malloc(((size_t)maxnum + 1) * sizeof(int16_t));
    if (m->bynum == NULL) return -1;
    for (uint32_t i = 0; i <= maxnum; i++) m->bynum[i] = -1;
    for (Py_ssize_t j = 0; j < nf; j++) m->bynum[m->fields[j].number] = (int16_t)j;
    return 0;
}

static int Decoder_init(Decoder *d, PyObject *args, PyObject *kw) {
    PyObject *messages, *kinds, *decoders, *report_type, *loads, *reference, *plans, *fallback;
    static char *names[] = {"messages", "kinds", "decoders", "report_type", "loads",
                            "reference", "plans", "fallback", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O!O!OOOOOO", names, &PyList_Type, &messages,
                                     &PyDict_Type, &kinds, &decoders, &report_type, &loads,
                                     &reference, &plans, &fallback))
        return -1;
    free_tables(d);
    Py_ssize_t nm = PyList_GET_SIZE(messages);
    d->msgs = PyMem_Calloc((size_t)nm + 1, sizeof(MsgT));
    if (d->msgs == NULL) return -1;
    d->nmsgs = nm;
    for (Py_ssize_t i = 0; i < nm; i++)
        if (load_message(d, &d->msgs[i], PyList_GET_ITEM(messages, i)) < 0) return -1;
    Py_XSETREF(d->kinds, Py_NewRef(kinds));
    Py_XSETREF(d->decoders, Py_NewRef(decoders));
    Py_XSETREF(d->report_type, Py_NewRef(report_type));
    Py_XSETREF(d->loads, Py_NewRef(loads));
    Py_XSETREF(d->reference, Py_NewRef(reference));
    Py_XSETREF(d->plans, Py_NewRef(plans));
    Py_XSETREF(d->fallback, Py_NewRef(fallback));
    Py_XSETREF(d->s_apiversion, PyUnicode_InternFromString("apiVersion"));
    Py_XSETREF(d->s_kind, PyUnicode_InternFromString("kind"));
    Py_XSETREF(d->s_unknown_fields, PyUnicode_InternFromString("unknown_fields"));
    Py_XSETREF(d->s_zero, PyUnicode_InternFromString("0"));
    return d->s_apiversion && d->s_kind && d->s_unknown_fields && d->s_zero ? 0 : -1;
}

/* The fallback is a bound method of the serializer that holds this decoder: a cycle,
 * so the type takes part in garbage collection. */
static int Decoder_traverse(Decoder *d, visitproc visit, void *arg) {
    Py_VISIT(d->kinds);
    Py_VISIT(d->decoders);
    Py_VISIT(d->report_type);
    Py_VISIT(d->loads);
    Py_VISIT(d->reference);
    Py_VISIT(d->plans);
    Py_VISIT(d->fallback);
    return 0;
}

static int Decoder_clear(Decoder *d) {
    Py_CLEAR(d->kinds);
    Py_CLEAR(d->decoders);
    Py_CLEAR(d->report_type);
    Py_CLEAR(d->loads);
    Py_CLEAR(d->reference);
    Py_CLEAR(d->plans);
    Py_CLEAR(d->fallback);
    return 0;
}

static void Decoder_dealloc(Decoder *d) {
    PyObject_GC_UnTrack(d);
    Decoder_clear(d);
    free_tables(d);
    Py_XDECREF(d->s_apiversion);
    Py_XDECREF(d->s_kind);
    Py_XDECREF(d->s_unknown_fields);
    Py_XDECREF(d->s_zero);
    Py_TYPE(d)->tp_free((PyObject *)d);
}

static PyMethodDef Decoder_methods[] = {
    {"decode", (PyCFunction)(void (*)(void))Decoder_decode, METH_FASTCALL,
     "decode(data, report) -> dict | None (None: use the Python decoder)"},
    {"decode_or_fallback", (PyCFunction)(void (*)(void))Decoder_decode_or_fallback,
     METH_FASTCALL, "decode_or_fallback(data, report=None) -> dict"},
    {"decode_raw", (PyCFunction)(void (*)(void))Decoder_decode_raw, METH_FASTCALL,
     "decode_raw(index, api_version, kind, raw, report) -> dict | None"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject DecoderType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "storage.protobuf._cdecode.Decoder",
    .tp_basicsize = sizeof(Decoder),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_traverse = (traverseproc)Decoder_traverse,
    .tp_clear = (inquiry)Decoder_clear,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Decoder_init,
    .tp_dealloc = (destructor)Decoder_dealloc,
    .tp_methods = Decoder_methods,
    .tp_doc = "Decoder(messages, kinds, decoders, report_type, loads, reference, plans, fallback)",
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_cdecode", "The protobuf decoder in C (storage/protobuf/native.py).",
    -1, NULL, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__cdecode(void) {
    if (PyType_Ready(&DecoderType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    if (PyModule_AddObjectRef(m, "Decoder", (PyObject *)&DecoderType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
