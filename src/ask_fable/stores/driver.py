"""The stores' hot statements run on the driver: each Core statement compiled once per dialect.

:func:`run` executes a SQLAlchemy Core statement (built once, at import, from ``stores/tables.py``)
on the DBAPI connection under a :class:`~sqlalchemy.Connection` of :meth:`Database.read` /
:meth:`Database.write`. The SQL is SQLAlchemy's own compilation of the statement for the
connection's dialect, its schema translated (``schema_translate_map``) and its column list chosen by
the parameters given, as ``Connection.execute`` would compile it; it is made once per statement,
dialect, schema and parameter names, and kept with the statement's bind and result processors, so
a call pays only the driver's execute and those processors. SQLAlchemy's per-execution machinery
(execution context, cursor result, connection events) is what this skips: about 0.07 ms of CPU a
statement. Driver errors reach the caller as SQLAlchemy raises them (:class:`~sqlalchemy.exc.DBAPIError`
with ``orig``), and a lost connection is invalidated, as ``Connection.execute`` does.

Statements with expanding (``IN``) or literal-execute parameters, or Python-side column defaults,
run through ``Connection.execute`` unchanged (:func:`run` hands them over).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NoReturn

if TYPE_CHECKING:
    from sqlalchemy import Connection
    from sqlalchemy.engine import Dialect
    from sqlalchemy.sql import Executable
    from sqlalchemy.sql.compiler import SQLCompiler

#: Compiled forms kept at most; only statements built once (at import) are expected here, so this
#: bound is a guard against a statement built per call, never a working limit.
MAX_PLANS = 2_000

Processor = Callable[[Any], Any]


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


class _Plan:
    """One statement compiled for one dialect, schema and set of parameter names."""

    __slots__ = ("binds", "compiled", "keys", "positions", "results", "sql")

    def __init__(self, statement: Executable, compiled: SQLCompiler) -> None:
        self.compiled = compiled
        self.sql = compiled.string
        self.binds: Mapping[str, Processor] = compiled._bind_processors  # type: ignore[assignment]
        self.positions: Sequence[str] | None = compiled.positiontup if compiled.positional else None
        self.keys = tuple(column[0] for column in compiled._result_columns)
        #: Per result column, the type's result processor (``None`` when the driver's value is kept),
        #: or ``()`` when no column has one; made from the first cursor description that has rows,
        #: as SQLAlchemy's result metadata is.
        self.results: tuple[Processor | None, ...] | None = None

    def parameters(self, params: Mapping[str, Any] | None) -> Sequence[Any] | Mapping[str, Any]:
        """The driver's parameters for ``params``: every bind's value, processed, in the driver's style."""
        values = self.compiled.construct_params(params, escape_names=False)
        binds = self.binds
        if self.positions is not None:
            return [binds[key](values[key]) if key in binds else values[key] for key in self.positions]
        escaped = self.compiled.escaped_bind_names
        return {escaped.get(key, key): binds[key](value) if key in binds else value
                for key, value in values.items()}

    def processors(self, dialect: Dialect,
                   description: Sequence[Sequence[Any]]) -> tuple[Processor | None, ...]:
        """The result processors of this statement's columns, empty when none has one (found once)."""
        if self.results is None:
            columns = self.compiled._result_columns
            found = tuple(column[3]._cached_result_processor(dialect, entry[1])
                          for column, entry in zip(columns, description, strict=True))
            self.results = found if any(found) else ()
        return self.results


#: By statement id, dialect, schema and parameter names: the statement and its plan (``None`` for
#: one that runs through ``Connection.execute``).
_plans: dict[tuple[int, str, str | None, tuple[str, ...]], tuple[Executable, _Plan | None]] = {}
_plans_lock = threading.Lock()


def _plan(conn: Connection, statement: Executable, names: tuple[str, ...]) -> _Plan | None:
    translate = conn.get_execution_options().get("schema_translate_map")
    schema = translate.get(None) if translate else None
    dialect = conn.dialect
    key = (id(statement), dialect.name, schema, names)
    found = _plans.get(key)
    if found is not None and found[0] is statement:
        return found[1]
    compiled: Any = statement.compile(  # type: ignore[attr-defined]
        dialect=dialect, column_keys=list(names), schema_translate_map=translate,
        render_schema_translate=bool(translate))
    plan = None if compiled.literal_execute_params or compiled.post_compile_params \
        or compiled.insert_prefetch or compiled.update_prefetch or not compiled._ordered_columns \
        else _Plan(statement, compiled)
    with _plans_lock:
        if len(_plans) >= MAX_PLANS:
            _plans.clear()
        _plans[key] = (statement, plan)
    return plan


def run(conn: Connection, statement: Executable, params: Mapping[str, Any] | None = None) -> Rows:
    """Execute ``statement`` with ``params`` on ``conn``'s driver connection, inside the transaction
    ``conn`` is in; its rows (processed as SQLAlchemy would) or its row count."""
    names = tuple(sorted(params)) if params else ()
    plan = _plan(conn, statement, names)
    if plan is None:
        return _through_sqlalchemy(conn, statement, params)
    driver: Any = conn.connection.driver_connection
    parameters = plan.parameters(params)
    try:
        cursor = driver.execute(plan.sql, parameters)
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
    names = tuple(sorted(rows[0]))
    plan = _plan(conn, statement, names)
    if plan is None or plan.keys or any(len(row) != len(names) for row in rows):
        conn.execute(statement, [dict(row) for row in rows])
        return
    driver: Any = conn.connection.driver_connection
    parameters = [plan.parameters(row) for row in rows]
    try:
        driver.cursor().executemany(plan.sql, parameters)
    except Exception as exc:
        raise_as_sqlalchemy(conn, exc, plan.sql, parameters)


def driver_call(conn: Connection, action: Callable[[Any], None], what: str) -> None:
    """``action(driver_connection)`` (a ``BEGIN``, a commit), its driver error raised as SQLAlchemy would."""
    try:
        action(conn.connection.driver_connection)
    except Exception as exc:
        raise_as_sqlalchemy(conn, exc, what, None)


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
