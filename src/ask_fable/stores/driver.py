"""The stores' statements run on the driver: each Core statement compiled once per dialect.

:func:`run` executes a SQLAlchemy Core statement on the DBAPI connection of a store transaction.
Its SQL is SQLAlchemy's own compilation for the connection's dialect and schema
(``schema_translate_map``), made once per statement, dialect, schema and parameter names and kept
with its bind and result processors; SQLAlchemy's per-execution machinery (execution context,
cursor result, events) is skipped. Driver errors are raised as ``Connection.execute`` raises them
(:class:`~sqlalchemy.exc.DBAPIError`), a lost connection invalidated. Statements with expanding or
literal-execute parameters, or Python-side defaults, go through ``Connection.execute``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NoReturn

from sqlalchemy import Connection

if TYPE_CHECKING:
    from sqlalchemy import Engine
    from sqlalchemy.engine import Dialect
    from sqlalchemy.sql import Executable
    from sqlalchemy.sql.compiler import SQLCompiler

#: Compiled forms kept at most: a guard against a statement built per call, never a working limit.
MAX_PLANS = 2_000

Processor = Callable[[Any], Any]
#: Where one of the driver's parameters comes from: its name for the driver, the key of the call's
#: parameters holding its value (``None``: the statement's own value, next), and its bind processor.
_Slot = tuple[str, str | None, Any, Processor | None]


class Rows:
    """The rows a statement returned (all fetched), or the rows a DML statement touched."""

    __slots__ = ("keys", "rowcount", "rows")

    def __init__(self, keys: tuple[str, ...], rows: list[tuple[Any, ...]], rowcount: int) -> None:
        self.keys = keys
        self.rows = rows
        self.rowcount = rowcount

    def __iter__(self) -> Iterator[tuple[Any, ...]]:
        return iter(self.rows)

    def first(self) -> tuple[Any, ...] | None:
        """The first row, or ``None``."""
        return self.rows[0] if self.rows else None

    def one(self) -> tuple[Any, ...]:
        """The one row; ``LookupError`` for none or several."""
        if len(self.rows) != 1:
            raise LookupError(f"expected one row, got {len(self.rows)}")
        return self.rows[0]

    def scalar(self) -> Any:
        """The first column of the first row, or ``None`` when there is no row."""
        return self.rows[0][0] if self.rows else None

    def scalars(self) -> list[Any]:
        """The first column of every row."""
        return [row[0] for row in self.rows]

    def mapping(self) -> dict[str, Any] | None:
        """The first row as a dict keyed by column, or ``None``."""
        return dict(zip(self.keys, self.rows[0], strict=True)) if self.rows else None

    def mappings(self) -> list[dict[str, Any]]:
        """Every row as a dict keyed by column."""
        keys = self.keys
        return [dict(zip(keys, row, strict=True)) for row in self.rows]


class StoreConnection(Connection):
    """A pooled :class:`~sqlalchemy.Connection` that keeps, for :func:`run`, its driver connection
    (``None`` once invalidated or closed), its statements' schema and plans, and one driver cursor
    (each statement's rows are fetched whole before the next runs)."""

    def __init__(self, engine: Engine, target: Target | None = None) -> None:
        # The stores' engines have no engine events: skip joining them per connection.
        super().__init__(engine, _has_events=None if engine._has_events else False)
        fairy = self.connection
        self.driver: Any = fairy.dbapi_connection
        self.cursor: Any = None
        #: The pool's record of the driver connection (``ConnectionPoolEntry.info``).
        self.pool_info = fairy.info
        self.translate, self.schema, self.plans = target or statement_target(self)

    def execution_options(self, **opt: Any) -> Connection:
        """``Connection.execution_options``, the schema :func:`run` names kept in step."""
        super().execution_options(**opt)
        self.translate, self.schema, self.plans = statement_target(self)
        return self

    def invalidate(self, exception: BaseException | None = None) -> None:
        """``Connection.invalidate``: the driver connection is no longer this one's."""
        self.driver = self.cursor = None
        super().invalidate(exception)

    def close(self) -> None:
        """``Connection.close``: the connection goes back to the pool."""
        self.driver = self.cursor = None
        super().close()


class _Plan:
    """One statement compiled for one dialect, schema and set of parameter names."""

    __slots__ = ("binds", "compiled", "direct", "keys", "results", "slots", "sql")

    def __init__(self, statement: Executable, compiled: SQLCompiler, names: tuple[str, ...]) -> None:
        self.compiled = compiled
        self.sql = compiled.string
        self.binds: Mapping[str, Processor] = compiled._bind_processors  # type: ignore[assignment]
        self.keys = tuple(column[0] for column in compiled._result_columns)
        #: Per result column, its result processor or ``None``; ``()`` when none has one.
        self.results: tuple[Processor | None, ...] | None = None
        self.slots = self._slots(names)
        #: The call's own parameters are the driver's: named, each under its own name, unprocessed.
        self.direct = bool(self.slots) and all(
            source == name and process is None for name, source, _value, process in self.slots or ())

    def _slots(self, names: tuple[str, ...]) -> tuple[_Slot, ...] | None:
        """Per driver parameter, given the names a call passes: ``(driver name, the call's key or
        None, the statement's own value, bind processor)``, what ``construct_params`` would find.
        ``None`` when a value must be found per call (a callable default, a missing required value)."""
        compiled: Any = self.compiled
        if getattr(compiled, "_collected_params", None):  # values given by ``statement.params()``
            return None
        given = set(names)
        found: dict[str, tuple[str | None, Any]] = {}
        for bind, name in compiled.bind_names.items():
            if bind.key in given:
                found[name] = (bind.key, None)
            elif name in given:
                found[name] = (name, None)
            elif bind.required or bind.callable:
                return None
            else:
                found[name] = (None, bind.value)
        binds, escaped = self.binds, compiled.escaped_bind_names
        slots = []
        for name, (source, value) in found.items():
            process = binds.get(name)
            if source is None and process is not None:  # the statement's own value, processed once
                value, process = process(value), None
            slots.append((escaped.get(name, name), source, value, process))
        return tuple(slots)

    def parameters(self, params: Mapping[str, Any] | None) -> Mapping[str, Any]:
        """The driver's named parameters for ``params``: every bind's value, processed."""
        slots = self.slots
        if slots is not None:
            values: Mapping[str, Any] = params or {}
            return {name: value if source is None else values[source] if process is None
                    else process(values[source]) for name, source, value, process in slots}
        constructed = self.compiled.construct_params(params, escape_names=False)
        binds, escaped = self.binds, self.compiled.escaped_bind_names
        return {escaped.get(key, key): binds[key](value) if key in binds else value
                for key, value in constructed.items()}

    def processors(self, dialect: Dialect,
                   description: Sequence[Sequence[Any]]) -> tuple[Processor | None, ...]:
        """The result processors of this statement's columns, empty when none has one (found once)."""
        if self.results is None:
            columns = self.compiled._result_columns
            found = tuple(column[3]._cached_result_processor(dialect, entry[1])
                          for column, entry in zip(columns, description, strict=True))
            self.results = found if any(found) else ()
        return self.results


#: By dialect and schema, then by statement id and parameter names: the statement and its plan
#: (``None`` for one that runs through ``Connection.execute``).
_Plans = dict[tuple[int, tuple[str, ...]], tuple["Executable", _Plan | None]]
_plans: dict[tuple[str, str | None], _Plans] = {}
_plans_lock = threading.Lock()


#: What a connection's statements compile for: its schema translation, the schema it names, and
#: the plans of statements compiled for its dialect and that schema.
Target = tuple[Mapping[str | None, str | None] | None, str | None, _Plans]


def statement_target(conn: Connection | Engine) -> Target:
    """The schema translation the statements of ``conn`` (or of an engine's connections) compile
    with, the schema it names, and their plans."""
    translate = conn.get_execution_options().get("schema_translate_map")
    schema = translate.get(None) if translate else None
    key = (conn.dialect.name, schema)
    found = _plans.get(key)
    if found is None:
        with _plans_lock:
            found = _plans.setdefault(key, {})
    return translate, schema, found


def _plan(conn: Connection, statement: Executable, names: tuple[str, ...]) -> _Plan | None:
    if isinstance(conn, StoreConnection):
        translate, plans = conn.translate, conn.plans
    else:
        translate, _schema, plans = statement_target(conn)
    key = (id(statement), names)
    found = plans.get(key)
    if found is not None and found[0] is statement:
        return found[1]
    compiled: Any = statement.compile(  # type: ignore[attr-defined]
        dialect=conn.dialect, column_keys=list(names), schema_translate_map=translate,
        render_schema_translate=bool(translate))
    plan = None if compiled.positional or compiled.literal_execute_params or compiled.post_compile_params \
        or compiled.insert_prefetch or compiled.update_prefetch or not compiled._ordered_columns \
        else _Plan(statement, compiled, names)
    with _plans_lock:
        if len(plans) >= MAX_PLANS:
            plans.clear()
        plans[key] = (statement, plan)
    return plan


def _driver(conn: Connection) -> Any:
    """The DBAPI connection under ``conn`` (for the stores' sync drivers, the driver's own)."""
    driver = conn.driver if isinstance(conn, StoreConnection) else None
    return driver if driver is not None else conn.connection.dbapi_connection


def run(conn: Connection, statement: Executable, params: Mapping[str, Any] | None = None) -> Rows:
    """Execute ``statement`` with ``params`` on ``conn``'s driver connection, inside the transaction
    ``conn`` is in; its rows (processed as SQLAlchemy would) or its row count."""
    # The names in the caller's order: a call site passes them alike each time, and another order
    # only makes another plan. The lookups are written out: this runs for every statement.
    names = tuple(params) if params else ()
    if isinstance(conn, StoreConnection):
        found = conn.plans.get((id(statement), names))
        plan = found[1] if found is not None and found[0] is statement else _plan(conn, statement, names)
        cursor = conn.cursor
        if cursor is None and conn.driver is not None:
            cursor = conn.cursor = conn.driver.cursor()
    else:
        plan, cursor = _plan(conn, statement, names), None
    if plan is None:
        return _through_sqlalchemy(conn, statement, params)
    parameters = params if plan.direct else plan.parameters(params)
    try:
        if cursor is None:
            cursor = _driver(conn).cursor()
        cursor.execute(plan.sql, parameters)
        if not plan.keys:  # no rows to read (psycopg builds its description anew on each access)
            return Rows((), [], cursor.rowcount)
        rows = cursor.fetchall()
        processors = plan.results if plan.results is not None or not rows \
            else plan.processors(conn.dialect, cursor.description)
    except Exception as exc:
        raise_as_sqlalchemy(conn, exc, plan.sql, parameters)
    if rows and processors:
        rows = [tuple(value if process is None else process(value)
                      for process, value in zip(processors, row, strict=True)) for row in rows]
    return Rows(plan.keys, rows, len(rows))


def run_many(conn: Connection, statement: Executable, rows: Sequence[Mapping[str, Any]]) -> None:
    """Execute a DML ``statement`` once per parameter set of ``rows`` (all naming the same
    parameters) on ``conn``'s driver connection, in one driver ``executemany``."""
    if not rows:
        return
    names = tuple(rows[0])
    plan = _plan(conn, statement, names)
    first = rows[0].keys()
    if plan is None or plan.keys or any(row.keys() != first for row in rows):
        conn.execute(statement, [dict(row) for row in rows])
        return
    driver = _driver(conn)
    parameters = list(rows) if plan.direct else [plan.parameters(row) for row in rows]
    try:
        driver.cursor().executemany(plan.sql, parameters)
    except Exception as exc:
        raise_as_sqlalchemy(conn, exc, plan.sql, parameters)


def run_each(conn: Connection, statement: Executable,
             rows: Sequence[Mapping[str, Any]]) -> list[list[tuple[Any, ...]]]:
    """Execute a DML statement with ``RETURNING`` once per parameter set of ``rows`` (all naming the
    same parameters); the rows each execution returned, in order (none for an ``INSERT`` whose
    ``ON CONFLICT DO NOTHING`` skipped its row). On PostgreSQL one driver ``executemany`` sends
    several in one pipeline, one round trip (SQLAlchemy's batched ``VALUES`` would build and parse a
    statement per batch size); one alone, or on another database, each runs as :func:`run` runs it."""
    if not rows:
        return []
    if len(rows) == 1 or conn.dialect.name != "postgresql":  # a pipeline costs more than one statement
        return [run(conn, statement, row).rows for row in rows]
    plan = _plan(conn, statement, tuple(rows[0]))
    first = rows[0].keys()
    if plan is None or any(row.keys() != first for row in rows):
        return [run(conn, statement, row).rows for row in rows]
    parameters = list(rows) if plan.direct else [plan.parameters(row) for row in rows]
    returned: list[list[tuple[Any, ...]]] = []
    try:
        cursor = _driver(conn).cursor()
        cursor.executemany(plan.sql, parameters, returning=True)
        while True:
            returned.append(cursor.fetchall())
            if not cursor.nextset():
                break
        processors = plan.processors(conn.dialect, cursor.description) if any(returned) else ()
    except Exception as exc:
        raise_as_sqlalchemy(conn, exc, plan.sql, parameters)
    if processors:
        returned = [[tuple(value if process is None else process(value)
                           for process, value in zip(processors, row, strict=True)) for row in result]
                    for result in returned]
    return returned


def raise_as_sqlalchemy(conn: Connection, exc: Exception, sql: str, parameters: Any) -> NoReturn:
    """Raise the driver's ``exc`` as ``Connection.execute`` would: wrapped in
    :class:`~sqlalchemy.exc.DBAPIError`, the connection (and the pool's older ones) invalidated when
    the error says the connection is lost. Any other exception is raised as it is."""
    from sqlalchemy.exc import DBAPIError

    dialect = conn.dialect
    error: type[Exception] = dialect.loaded_dbapi.Error
    if not isinstance(exc, error):
        raise exc
    proxied = None if conn.invalidated or conn.closed else conn.connection
    driver_error: Any = exc
    lost = proxied is not None and dialect.is_disconnect(driver_error, proxied, None)
    wrapped = DBAPIError.instance(sql, parameters, exc, error, hide_parameters=conn.engine.hide_parameters,
                                  connection_invalidated=lost, dialect=dialect)
    if lost and proxied is not None:
        conn.engine.pool._invalidate(proxied, exc)
        conn.invalidate(exc)
    raise wrapped from exc


def _through_sqlalchemy(conn: Connection, statement: Executable, params: Mapping[str, Any] | None) -> Rows:
    result = conn.execute(statement, dict(params) if params else None)
    if not result.returns_rows:
        return Rows((), [], result.rowcount)
    keys = tuple(result.keys())
    return Rows(keys, [tuple(row) for row in result], result.rowcount)
