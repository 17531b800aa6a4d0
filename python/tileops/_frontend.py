"""The AST front-end of ``@tl.jit``: Python control flow with asc2's meaning.

A kernel is traced once, so plain Python would run a ``tl.range`` body once and forget what it
rebinds. asc2 compiles kernels from their AST; so does this front-end. It rewrites the kernel's
source before the first trace:

* a name rebound in a ``for`` body (plain, augmented or tuple assignment) and needed by the next
  iteration or after the loop is carried through a ``tl.Var`` when the loop is a runtime
  ``tl.range``; for Python iteration (``range``, ``tl.static_range``) nothing changes;
* ``if`` / ``elif`` / ``else`` on a traced scalar is a runtime branch whose rebound names (those
  used after it) are its results; on Python values it is decided at trace time as before;
* ``and`` / ``or`` / ``not`` in conditions and ``a if c else b`` accept traced scalars
  (``tl.logical_*``, ``tl.where``); ``while`` on a traced condition is an error (the IR has no
  while loop).

Which names a loop or branch must carry comes from a liveness analysis of the kernel's body, so
temporaries that each iteration or branch assigns before use are never carried. A name that has
no value on some path (first assigned inside a runtime loop, or in one branch only) is bound to
an ``_Unavailable`` that raises a trace error naming the line when used.

Kernels without source (``exec``, some REPLs) run unchanged; their runtime loops refuse to
rebind a name (the check is in tl.range itself), so no construct silently changes meaning.
"""

import ast
import inspect
import os
import sys
import textwrap
import threading
import types

from tileops import _C

_tl = _C.tl
_Value, _Var, _Range, _Branch = _tl.Value, _tl.Var, _tl._Range, _tl._Branch


_state = threading.local()  # runtime loops open on this thread (their bodies are being traced)
_REWRITTEN = set()  # code objects this front-end compiled (and the ones nested in them)


def _runtime_depth():
    return getattr(_state, "depth", 0)


def _error(where, construct, message, exc=ValueError):
    exc = {ValueError: _tl.TraceError, TypeError: _tl.TraceTypeError}[exc]
    return exc(f"tl: {where}: '{construct}': {message}")


# --- runtime helpers called by the rewritten kernel ---------------------------------------


class _Unbound:
    """peek()'s answer for a name with no value."""

    def __repr__(self):
        return "<unbound>"


_UNBOUND = _Unbound()


class _Unavailable:
    """A name with no value on some path of the runtime control flow: any use is an error."""

    __slots__ = ("_message",)

    def __init__(self, message):
        object.__setattr__(self, "_message", message)

    def _fail(self, *_args, **_kwargs):
        raise _tl.TraceError(self._message)

    def __getattr__(self, _name):
        self._fail()

    def __setattr__(self, _name, _value):
        self._fail()

    def __repr__(self):
        return f"<unavailable: {self._message}>"

    __bool__ = __index__ = __int__ = __float__ = __iter__ = __len__ = __call__ = _fail
    __getitem__ = __setitem__ = __neg__ = __pos__ = __abs__ = __invert__ = _fail
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _fail
    __truediv__ = __rtruediv__ = __floordiv__ = __rfloordiv__ = __mod__ = __rmod__ = _fail
    __pow__ = __rpow__ = __and__ = __rand__ = __or__ = __ror__ = __xor__ = __rxor__ = _fail
    __lshift__ = __rlshift__ = __rshift__ = __rrshift__ = __matmul__ = __rmatmul__ = _fail
    __lt__ = __le__ = __gt__ = __ge__ = _fail

    def __eq__(self, _other):
        self._fail()

    def __ne__(self, _other):
        self._fail()

    __hash__ = None


def peek(read):
    """``read()`` (a lambda reading one name), or _UNBOUND if the name has no value yet."""
    try:
        return read()
    except NameError:
        return _UNBOUND


def _unbound(v):
    return v is _UNBOUND or isinstance(v, _Unavailable)


def _is_number(v):
    if isinstance(v, (bool, int, float)):
        return True
    np = sys.modules.get("numpy")
    return np is not None and isinstance(v, np.generic) and v.dtype.kind in "biuf"


def _carryable(v):
    """A value a loop or branch can carry: a traced tile or scalar, or a number."""
    if isinstance(v, _Value):
        return v.is_tile or v.is_scalar
    return _is_number(v)


def _type(v):
    """(tile?, dtype, shape) of a traced value; None for numbers (they adopt the type)."""
    if isinstance(v, _Value):
        return (v.is_tile, str(v.dtype).rsplit(".", 1)[-1], tuple(v.shape))
    return None


def _type_text(t):
    return f"tile<{'x'.join(map(str, t[2]))}x{t[1]}>" if t[0] else t[1]


def _describe(v):
    return _type_text(_type(v)) if isinstance(v, _Value) else type(v).__name__


class Loop:
    """A ``for`` loop of the kernel. For a runtime tl.range, each name the loop carries is held
    by a tl.Var made before the loop opens (so tl.range makes it loop-carried); the body reads
    it at the start and sets it at the end."""

    def __init__(self, iterable, names, values, where):
        self.iterable, self.names, self.where = iterable, names, where
        self.runtime = isinstance(iterable, _Range)
        if not self.runtime:
            return
        iterable._set_front_end()
        self.before = list(values)
        self.vars = []
        for v in values:
            if isinstance(v, _Var):
                self.vars.append(v)  # the user's Var carries itself
            elif _carryable(v):
                self.vars.append(_Var(v))
            else:
                self.vars.append(None)

    def __iter__(self):
        return self._steps() if self.runtime else iter(self.iterable)

    def _steps(self):
        """The runtime loop's single traced iteration; the body must reach its end (where the
        rewritten code calls leave), or the ops after a `continue` would silently vanish."""
        steps = iter(self.iterable)
        self.left = False
        _state.depth = _runtime_depth() + 1
        try:
            value = next(steps)  # opens the loop
            yield value
        finally:
            _state.depth -= 1
        if not self.left:
            raise _error(self.where, "range", "the body of a runtime loop was left before its "
                         "end ('continue'): a runtime loop is traced once, so the rest of the "
                         "body would never run; guard it with an if instead")
        for _ in steps:  # closes the loop
            pass

    def carries(self, i):
        v = self.vars[i]
        return v is not None and v is not self.before[i]

    def get(self, i):
        return self.vars[i].value

    def leave(self, values):
        """At the end of the body: the carried names' new values become the Vars'."""
        self.left = True
        for i, now in enumerate(values):
            name, var, before = self.names[i], self.vars[i], self.before[i]
            if var is None:
                if not _unbound(before) and now is not before:
                    raise _error(self.where, "range",
                                 f"'{name}' holds a {type(before).__name__} before the loop "
                                 "and is rebound in its body; only tiles, scalars and numbers "
                                 "can carry a value from one iteration to the next (use a "
                                 "different name inside the loop)")
                continue
            if now is var:
                continue
            if _unbound(now) or not _carryable(now):
                raise _error(self.where, "range",
                             f"'{name}' is carried by this loop (a {_describe(before)} before "
                             f"it) and holds {_describe(now) if not _unbound(now) else 'nothing'}"
                             " at the end of the body; a loop-carried name must keep holding a "
                             "tile or scalar")
            want, got = _type(var), _type(now)
            if got is not None and want != got:
                hint = (" (it starts as a Python number: start it as a tile or scalar of the "
                        "final type, e.g. tl.full(shape, 0.0, dtype))"
                        if _is_number(before) else "")
                raise _error(self.where, "range",
                             f"'{name}' changes type in the loop body, from {_type_text(want)} "
                             f"to {_type_text(got)}; a loop-carried value keeps its type{hint}")
            var.set(now)

    def final(self, i, now):
        """The name's value after the loop."""
        var, before = self.vars[i], self.before[i]
        if var is before:
            return var
        if var is not None:
            return var.value
        if _unbound(before) and isinstance(now, _Value):
            return _Unavailable(
                f"tl: {self.where}: 'range': '{self.names[i]}' is first assigned in the body "
                "of this runtime loop, which may run zero times: it has no value after the loop "
                "(give it one before the loop)")
        return now


class If:
    """An ``if`` statement of the kernel: a Python branch at trace time, or, on a traced
    scalar, a runtime branch whose `results` (names used after it) become the if's results."""

    def __init__(self, test, names, results, fresh, values, where, exit_=None):
        """`fresh`: results both branches assign on every path, so their value before the if
        cannot reach after it (its type does not bind them)."""
        self.names, self.results, self.where = names, results, where
        self.runtime = isinstance(test, _Value)
        if not self.runtime:
            self.truth = bool(test)
            return
        if not test.is_scalar:
            raise _error(where, "if", f"the condition is a {_describe(test)}; a runtime if "
                         "needs a scalar (reduce the tile first, or use tl.where per element)",
                         TypeError)
        if exit_ is not None:
            raise _error(where, exit_, f"'{exit_}' inside a runtime if (a condition on a traced "
                         "value) is not supported: both branches are traced and the IR has no "
                         "early exit; assign the results and let both paths continue")
        self.before = list(values)
        self.fresh = [n in fresh and not isinstance(v, _Var) for n, v in zip(names, values)]
        self.vars, self.lost = [None] * len(names), [None] * len(names)
        self.types = [_type(v) if _carryable(v) and not f else None
                      for v, f in zip(values, self.fresh)]
        for i, (name, v) in enumerate(zip(names, values)):
            if name not in results or self.fresh[i]:
                continue
            if isinstance(v, _Var):
                self.vars[i] = v
            elif _carryable(v):
                self.vars[i] = _Var(v)  # made before the branch opens: a candidate result
        self.branch = _Branch(test)

    def take_then(self):
        if not self.runtime:
            return self.truth
        self.branch.then_begin()
        return True

    def then_done(self, values):
        if self.runtime:
            self._collect(values, "then")
            self.branch.then_end()

    def take_else(self):
        if not self.runtime:
            return not self.truth
        self.branch.else_begin()
        return True

    def before_value(self, i):
        """What name i held before the if (for the else branch, after the then branch)."""
        v = self.before[i]
        if _unbound(v):
            return _Unavailable(f"tl: {self.where}: 'if': '{self.names[i]}' has no value here "
                                "(it is assigned in the other branch of this runtime if)")
        return v

    def else_done(self, values):
        if self.runtime:
            self._collect(values, "else")
            self.branch.else_end()
            self.branch.finish()

    def _collect(self, values, side):
        for i, now in enumerate(values):
            name = self.names[i]
            if name not in self.results:
                continue
            var, before = self.vars[i], self.before[i]
            if now is var or _unbound(now) or (now is before and not self.fresh[i]):
                continue
            if not _carryable(now):
                self.lost[i] = f"it is assigned a {type(now).__name__} in the {side} branch"
                continue
            want, got = self.types[i], _type(now)
            if want is not None and got is not None and want != got:
                raise _error(self.where, "if",
                             f"'{name}' is a {_type_text(want)} before or in one branch and "
                             f"becomes a {_type_text(got)} in the {side} branch; a name both "
                             "paths of a runtime if define keeps one type")
            if var is None:  # first assigned in this branch
                var = self.vars[i] = _Var(now)
                self.branch.adopt(var)
            else:
                var.set(now)
            self.types[i] = self.types[i] or got

    def result(self, i, now):
        """Name i after the if."""
        var, name = self.vars[i], self.names[i]
        if self.lost[i] is not None:
            return _Unavailable(f"tl: {self.where}: 'if': '{name}' cannot be a result of this "
                                f"runtime if: {self.lost[i]} (only tiles, scalars and numbers "
                                "can)")
        if var is None:
            return now if not (_unbound(self.before[i]) or self.fresh[i]) else _Unavailable(
                f"tl: {self.where}: 'if': '{name}' has no value after this runtime if")
        if var is self.before[i]:
            return var
        if _tl._value_id(var) < 0:
            return _Unavailable(f"tl: {self.where}: 'if': '{name}' is assigned in only one "
                                "branch of this runtime if, so it has no value after it "
                                "(assign it before the if or in both branches)")
        return var.value


def stored(value, where):
    """The value of an assignment to a subscript or attribute: a traced value stored into an
    object inside a runtime loop could not carry to the next iteration."""
    if isinstance(value, _Value) and _runtime_depth() > 0:
        raise _error(where, "range", "a traced value is stored into a container or attribute "
                     "inside a runtime loop; only names carry values from one iteration to the "
                     "next (assign it to a name)")
    return value


def condition(v, where, construct):
    """A while condition: a Python truth value (a traced one has no while loop to run in)."""
    if isinstance(v, _Value):
        raise _error(where, construct, "the condition is a traced value; runtime while loops "
                     "are not supported (the IR has counted loops only): use tl.range with a "
                     "bound and an if inside", TypeError)
    return v


def and_(*operands):
    """``a and b and ...``: Python's short-circuit on Python values, tl.logical_and once a
    traced value is met (every operand after it is then evaluated)."""
    v = operands[0]()
    for read in operands[1:]:
        if isinstance(v, _Value):
            v = _tl.logical_and(v, read())
        elif not v:
            return v
        else:
            v = read()
    return v


def or_(*operands):
    v = operands[0]()
    for read in operands[1:]:
        if isinstance(v, _Value):
            v = _tl.logical_or(v, read())
        elif v:
            return v
        else:
            v = read()
    return v


def not_(v):
    return _tl.logical_not(v) if isinstance(v, _Value) else not v


def select(cond, then, otherwise):
    """``a if c else b``: tl.where on a traced condition (both sides evaluated)."""
    if isinstance(cond, _Value):
        a, b = then(), otherwise()
        ta, tb = _type(a), _type(b)
        if ta is not None and tb is not None and ta != tb:
            raise _error(_caller(), "where", f"the two sides of `a if c else b` on a traced "
                         f"condition are a {_type_text(ta)} and a {_type_text(tb)}; they must "
                         "have one type (both are evaluated and selected per lane)", TypeError)
        return _tl.where(cond, a, b)
    return then() if cond else otherwise()


def _caller():
    """file:line of the user's line being traced."""
    file, line, _ = _tl._caller_location()
    return f"{os.path.basename(file)}:{line}"


# --- liveness -------------------------------------------------------------------------------


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef, ast.ListComp,
           ast.SetComp, ast.DictComp, ast.GeneratorExp)


def _loads(node):
    """Names read anywhere in `node` (nested scopes included: their free names are reads)."""
    if node is None:
        return set()
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and
            isinstance(n.ctx, ast.Load)}


def _target_names(target):
    """Names a plain assignment target binds."""
    if isinstance(target, ast.Name):
        return {target.id}
    if isinstance(target, (ast.Tuple, ast.List)):
        return set().union(*(_target_names(e) for e in target.elts)) if target.elts else set()
    if isinstance(target, ast.Starred):
        return _target_names(target.value)
    return set()


def _exit(stmts):
    """The first return / raise / break / continue that would leave `stmts` early, or None."""
    def visit(node, in_loop):
        if isinstance(node, (ast.Return, ast.Raise)) or \
                (not in_loop and isinstance(node, (ast.Break, ast.Continue))):
            return node
        if isinstance(node, _SCOPES):
            return None
        loop = in_loop or isinstance(node, (ast.For, ast.AsyncFor, ast.While))
        for child in ast.iter_child_nodes(node):
            found = visit(child, loop)
            if found is not None:
                return found
        return None

    for s in stmts:
        found = visit(s, False)
        if found is not None:
            return found
    return None


def definite(stmts):
    """Names every path through `stmts` that reaches their end assigns."""
    names = set()
    for s in stmts:
        if isinstance(s, ast.Assign):
            names.update(*(_target_names(t) for t in s.targets))
        elif isinstance(s, (ast.AugAssign, ast.AnnAssign)) and \
                (not isinstance(s, ast.AnnAssign) or s.value is not None):
            names.update(_target_names(s.target))
        elif isinstance(s, ast.If):
            names.update(definite(s.body) & definite(s.orelse))
        elif isinstance(s, (ast.With, ast.AsyncWith)):
            names.update(definite(s.body))
        elif isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(s.name)
        elif isinstance(s, (ast.Return, ast.Raise, ast.Break, ast.Continue)):
            break
    return names


def _declared(fdef):
    """Names `fdef` itself declares global or nonlocal."""
    names = set()

    def visit(node):
        if isinstance(node, (ast.Global, ast.Nonlocal)):
            names.update(node.names)
        for child in ast.iter_child_nodes(node):
            if not isinstance(child, _SCOPES):
                visit(child)

    for s in fdef.body:
        visit(s)
    return names


def assigned(stmts):
    """Names bound anywhere in `stmts`, not counting nested scopes."""
    names = set()

    def visit(node):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
            return
        if isinstance(node, _SCOPES):
            if not isinstance(node, ast.Lambda):  # a walrus in a comprehension binds here
                names.update(n.target.id for n in ast.walk(node) if isinstance(n, ast.NamedExpr))
            return
        for child in ast.iter_child_nodes(node):
            visit(child)

    for s in stmts:
        visit(s)
    return names


class _Liveness:
    """Backward liveness over one function body. Records, per original For node, the names
    live at the loop head (needed by a next iteration or after the loop), and per If node, the
    names live after it."""

    def __init__(self):
        self.head = {}  # id(For/While) -> set
        self.after = {}  # id(If) -> set
        self.loops = []  # (live after, live at head) of the enclosing loops

    def block(self, stmts, out):
        live = set(out)
        for s in reversed(stmts):
            live = self.stmt(s, live)
        return live

    def _loop(self, node, out, target_defs, test_uses):
        tail = self.block(node.orelse, out)
        head = set(tail) | test_uses
        while True:
            self.loops.append((out, head))
            body = self.block(node.body, head)
            self.loops.pop()
            new = tail | test_uses | (body - target_defs)
            if new == head:
                break
            head = new
        self.head[id(node)] = head
        return head

    def stmt(self, s, out):
        if isinstance(s, (ast.For, ast.AsyncFor)):
            head = self._loop(s, out, _target_names(s.target), _loads(s.target))
            return head | _loads(s.iter)
        if isinstance(s, ast.While):
            return self._loop(s, out, set(), _loads(s.test))
        if isinstance(s, ast.If):
            self.after[id(s)] = set(out)
            return _loads(s.test) | self.block(s.body, out) | self.block(s.orelse, out)
        if isinstance(s, (ast.With, ast.AsyncWith)):
            live = self.block(s.body, out)
            for item in s.items:
                live = (live - _target_names(item.optional_vars)) | _loads(item.context_expr) \
                    | _loads(item.optional_vars)
            return live
        if isinstance(s, ast.Try) or type(s).__name__ == "TryStar":
            after = self.block(s.finalbody, out)
            handlers = set().union(*(self.block(h.body, after) for h in s.handlers)) \
                if s.handlers else set()
            live = self.block(s.body, self.block(s.orelse, after) | handlers) | handlers
            return live | after
        if isinstance(s, ast.Match):
            cases = set().union(*(self.block(c.body, out) | _loads(c.pattern) | _loads(c.guard)
                                  for c in s.cases)) if s.cases else set()
            return _loads(s.subject) | cases | set(out)
        if isinstance(s, ast.Break):
            return set(self.loops[-1][0]) if self.loops else set(out)
        if isinstance(s, ast.Continue):
            return set(self.loops[-1][1]) if self.loops else set(out)
        if isinstance(s, (ast.Return, ast.Raise)):
            return _loads(s)
        if isinstance(s, ast.Assign):
            kills = set().union(*(_target_names(t) for t in s.targets))
            return (out - kills) | _loads(s)
        if isinstance(s, ast.AnnAssign):
            kills = _target_names(s.target) if s.value is not None else set()
            return (out - kills) | _loads(s.value) | _loads(s.target)
        if isinstance(s, ast.AugAssign):
            return out | _loads(s) | _target_names(s.target)
        if isinstance(s, ast.Delete):
            return (out - set().union(*(_target_names(t) for t in s.targets))) | _loads(s)
        if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return (out - {s.name}) | _loads(s)
        return out | _loads(s)  # expressions, assert, pass, global, import, ...


# --- the rewrite ----------------------------------------------------------------------------


def _name(id_, store=False):
    return ast.Name(id=id_, ctx=ast.Store() if store else ast.Load())


def _call(func, *args):
    return ast.Call(func=func, args=list(args), keywords=[])


def _fe(attr):
    return ast.Attribute(value=_name("__tl_fe"), attr=attr, ctx=ast.Load())


def _method(obj, attr, *args):
    return _call(ast.Attribute(value=_name(obj), attr=attr, ctx=ast.Load()), *args)


def _peek(name):
    lam = ast.Lambda(args=ast.arguments(posonlyargs=[], args=[], vararg=None, kwonlyargs=[],
                                        kw_defaults=[], kwarg=None, defaults=[]),
                     body=_name(name))
    return _call(_fe("peek"), lam)


def _peeks(names):
    return ast.Tuple(elts=[_peek(n) for n in names], ctx=ast.Load())


def _strs(names):
    return ast.Tuple(elts=[ast.Constant(n) for n in names], ctx=ast.Load())


def _assign(name, value):
    return ast.Assign(targets=[_name(name, store=True)], value=value)


def _if(test, body, orelse=None):
    return ast.If(test=test, body=body or [ast.Pass()], orelse=orelse or [])


class _Rewriter:
    """Rewrites one function (and, separately, the functions nested in it)."""

    def __init__(self, file, line_offset):
        self.file, self.line_offset = file, line_offset
        self.counter = 0
        self.in_loop = False  # inside the body of a for statement

    def function(self, fdef):
        live = _Liveness()
        live.block(fdef.body, set())
        self.live = live
        self.outer = _declared(fdef)  # global / nonlocal: live beyond the function
        fdef.body = self.block(fdef.body)
        return fdef

    def where(self, node):
        return f"{self.file}:{node.lineno + self.line_offset}"

    def tag(self, kind):
        self.counter += 1
        return f"__tl_{kind}{self.counter}"

    def block(self, stmts):
        out = []
        for s in stmts:
            out.extend(self.stmt(s))
        return out

    def stmt(self, s):
        if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)):
            saved = (self.live, self.outer)
            self.function(s)
            self.live, self.outer = saved
            return [s]
        if isinstance(s, ast.ClassDef):
            return [s]  # a class body runs as Python, while tracing
        if isinstance(s, ast.Match):
            for case in s.cases:
                case.body = self.block(case.body)
            return [_Expressions(self).visit(s)]
        if isinstance(s, ast.For):
            return self.loop(s)
        if isinstance(s, ast.If):
            return self.branch(s)
        if isinstance(s, ast.While):
            s.test = _call(_fe("condition"), self.expr(s.test, test=True),
                           ast.Constant(self.where(s)), ast.Constant("while"))
            s.body, s.orelse = self.block(s.body), self.block(s.orelse)
            return [s]
        for field in ("body", "orelse", "finalbody"):
            if isinstance(getattr(s, field, None), list):
                setattr(s, field, self.block(getattr(s, field)))
        if isinstance(s, ast.Try):
            for h in s.handlers:
                h.body = self.block(h.body)
        if isinstance(s, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and s.value is not None \
                and self.in_loop:
            targets = s.targets if isinstance(s, ast.Assign) else [s.target]
            if any(not isinstance(t, ast.Name) for t in targets):  # into an object
                s.value = ast.copy_location(
                    _call(_fe("stored"), s.value, ast.Constant(self.where(s))), s.value)
        return [_Expressions(self).visit(s)]

    def expr(self, e, test=False):
        """An expression with `a if c else b` rewritten; in a condition (`test`), also
        and / or / not. Not around a walrus, which must bind in the function, not a lambda."""
        if any(isinstance(n, ast.NamedExpr) for n in ast.walk(e)):
            return e
        if test and isinstance(e, ast.BoolOp):
            lams = [ast.Lambda(args=_no_args(), body=self.expr(v, test=True)) for v in e.values]
            return ast.copy_location(
                _call(_fe("and_" if isinstance(e.op, ast.And) else "or_"), *lams), e)
        if test and isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.Not):
            return ast.copy_location(_call(_fe("not_"), self.expr(e.operand, test=True)), e)
        return _Expressions(self).visit(e)

    def loop(self, s):
        tag = self.tag("loop")
        targets = _target_names(s.target)
        names = sorted((assigned(s.body) & (self.live.head[id(s)] | self.outer)) - targets)
        saved, self.in_loop = self.in_loop, True
        body = self.block(s.body)
        self.in_loop = saved
        orelse = self.block(s.orelse)
        enter = [_if(_method(tag, "carries", ast.Constant(i)),
                     [_assign(n, _method(tag, "get", ast.Constant(i)))])
                 for i, n in enumerate(names)]
        leave = ast.Expr(_method(tag, "leave", _peeks(names)))
        final = [_assign(n, _method(tag, "final", ast.Constant(i), _peek(n)))
                 for i, n in enumerate(names)]
        runtime = ast.Attribute(value=_name(tag), attr="runtime", ctx=ast.Load())
        make = _assign(tag, _call(_fe("Loop"), self.expr(s.iter), _strs(names),
                                  _peeks(names), ast.Constant(self.where(s))))
        s.iter = _name(tag)
        s.body = ([_if(runtime, enter)] if enter else []) + body + [_if(runtime, [leave])]
        # Its Vars go now, not when the tag is next rebound (C++ loops and branches opened
        # meanwhile would hold them).
        done = ast.Delete(targets=[ast.Name(id=tag, ctx=ast.Del())])
        if orelse:  # a runtime loop has no break: its else always runs, after the results
            s.orelse = ([_if(runtime, final)] if final else []) + orelse
            return [make, s, done]
        return [make, s] + ([_if(runtime, final)] if final else []) + [done]

    def branch(self, s):
        tag = self.tag("if")
        names = sorted(assigned(s.body) | assigned(s.orelse))
        results = sorted(set(names) & (self.live.after[id(s)] | self.outer))
        fresh = sorted(set(results) & definite(s.body) & definite(s.orelse))
        then_names = assigned(s.body)
        body, orelse = self.block(s.body), self.block(s.orelse)
        runtime = ast.Attribute(value=_name(tag), attr="runtime", ctx=ast.Load())
        exit_ = _exit(s.body + s.orelse)
        make = _assign(tag, _call(_fe("If"), self.expr(s.test, test=True), _strs(names),
                                  _strs(results), _strs(fresh), _peeks(names),
                                  ast.Constant(self.where(s)),
                                  ast.Constant(type(exit_).__name__.lower() if exit_ else None)))
        restore = [_assign(n, _method(tag, "before_value", ast.Constant(i)))
                   for i, n in enumerate(names) if n in then_names]
        then_part = _if(_method(tag, "take_then"),
                        body + [ast.Expr(_method(tag, "then_done", _peeks(names)))])
        else_part = _if(_method(tag, "take_else"),
                        ([_if(runtime, restore)] if restore else []) + orelse +
                        [ast.Expr(_method(tag, "else_done", _peeks(names)))])
        after = [_assign(n, _method(tag, "result", ast.Constant(i), _peek(n)))
                 for i, n in enumerate(names) if n in results]
        out = [make, then_part, else_part]
        if after:
            out.append(_if(runtime, after))
        out.append(ast.Delete(targets=[ast.Name(id=tag, ctx=ast.Del())]))
        for node in out:
            ast.copy_location(node, s)
        return out


def _no_args():
    return ast.arguments(posonlyargs=[], args=[], vararg=None, kwonlyargs=[], kw_defaults=[],
                         kwarg=None, defaults=[])


class _Expressions(ast.NodeTransformer):
    """`a if c else b` inside a statement; nested functions and lambdas get their own pass."""

    def __init__(self, rewriter):
        self.rewriter = rewriter

    def visit_IfExp(self, node):  # noqa: N802 - ast.NodeTransformer naming
        if any(isinstance(n, ast.NamedExpr) for n in ast.walk(node)):
            return node  # a walrus must bind in the kernel, not in a helper lambda
        self.generic_visit(node)
        lam = [ast.Lambda(args=_no_args(), body=v) for v in (node.body, node.orelse)]
        return ast.copy_location(_call(_fe("select"), self.rewriter.expr(node.test, True),
                                       *lam), node)


def compile_kernel(fn):
    """`fn` rebuilt from its rewritten source, sharing its globals, closure cells and
    defaults; None when its source is not available (exec, REPL) or is not a plain def."""
    try:
        lines, start = inspect.getsourcelines(fn)
        path = inspect.getsourcefile(fn) or fn.__code__.co_filename
        tree = ast.parse(textwrap.dedent("".join(lines)))
    except (OSError, TypeError, SyntaxError, IndentationError):
        return None
    if not tree.body or not isinstance(tree.body[0], ast.FunctionDef) or \
            tree.body[0].name != fn.__name__:
        return None  # a lambda, or source inspect could not cut out
    fdef = tree.body[0]
    fdef.decorator_list = []
    _Rewriter(os.path.basename(path), start - 1).function(fdef)
    free = [n for n in fn.__code__.co_freevars if n != "__tl_fe"]  # a kernel nested in one
    factory = ast.FunctionDef(
        name="__tl_factory",
        args=ast.arguments(posonlyargs=[], args=[ast.arg(arg=n) for n in free + ["__tl_fe"]],
                           vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[]),
        body=[fdef, ast.Return(_name(fn.__name__))], decorator_list=[], returns=None)
    module = ast.Module(body=[factory], type_ignores=[])
    ast.fix_missing_locations(module)
    ast.increment_lineno(module, start - 1)
    namespace = {}
    exec(compile(module, path, "exec"), fn.__globals__, namespace)  # noqa: S102 - our own AST
    code = next(c for c in namespace["__tl_factory"].__code__.co_consts
                if isinstance(c, types.CodeType) and c.co_name == fn.__name__)
    cells = dict(zip(fn.__code__.co_freevars, fn.__closure__ or ()))
    cells["__tl_fe"] = types.CellType(sys.modules[__name__])
    rebuilt = types.FunctionType(code, fn.__globals__, fn.__name__, fn.__defaults__,
                                 tuple(cells[n] for n in code.co_freevars))
    rebuilt.__kwdefaults__ = fn.__kwdefaults__
    rebuilt.__qualname__ = fn.__qualname__
    _remember(code)
    return rebuilt


def _remember(code):
    """Marks `code` and the code nested in it (lambdas, comprehensions, generators, nested
    functions) as the front-end's, for tl.range's check of who iterates it."""
    _REWRITTEN.add(code)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            _remember(const)


def _iterated_by_rewritten_code(code):
    return code in _REWRITTEN


_tl._set_front_end_code_check(_iterated_by_rewritten_code)
