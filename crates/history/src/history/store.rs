//! The history file: SQLite, one row per run (its summary, error counters, configuration and
//! the deflated document), one row per series (a machine's figure of one profile measured one
//! way) and one small row per figure and run, clustered by series and run so a figure's trend is
//! one range read however long the history grows.

use super::{Filter, HistoryError, Keep, LastRun, Record, fact_changes};
use crate::wire::check::Status;
use crate::wire::counters::{Acknowledgement, ErrorCounter};
use crate::wire::document::Document;
use crate::wire::figures::{Direction, Figure};
use crate::wire::history::{FactChange, PastReference, Point, Points, RunSummary, Trend};
use rusqlite::{Connection, OpenFlags, OptionalExtension, params};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// `PRAGMA application_id`: "hchk", so a file is known as ours before any table is read.
const APPLICATION_ID: i32 = 0x6863_686b;
/// The schema this version writes; files of a newer one are refused. 2 added the operators'
/// acknowledgements of conditions (a file of schema 1 gains the table when next written).
const SCHEMA_VERSION: i32 = 3;
/// How long a run waits for another writer before giving up: appends take milliseconds, and a
/// run under a scheduler's timeout must not spend it waiting.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS runs(
    id INTEGER PRIMARY KEY,
    machine TEXT NOT NULL,
    hostname TEXT,
    profile TEXT NOT NULL,
    started INTEGER NOT NULL,
    seconds REAL NOT NULL,
    boot_id TEXT,
    kernel TEXT,
    firmware TEXT,
    worst TEXT,
    counters TEXT,
    facts TEXT,
    document BLOB NOT NULL
) STRICT;
CREATE INDEX IF NOT EXISTS runs_by_machine ON runs(machine, id);
CREATE TABLE IF NOT EXISTS series(
    id INTEGER PRIMARY KEY,
    machine TEXT NOT NULL,
    name TEXT NOT NULL,
    profile TEXT NOT NULL,
    basis TEXT NOT NULL,
    unit TEXT NOT NULL,
    direction TEXT NOT NULL,
    UNIQUE (machine, name, profile, basis)
) STRICT;
CREATE TABLE IF NOT EXISTS figures(
    series INTEGER NOT NULL,
    run INTEGER NOT NULL,
    started INTEGER NOT NULL,
    value REAL NOT NULL,
    noisy INTEGER NOT NULL,
    status INTEGER,
    reference REAL,
    reference_runs INTEGER,
    PRIMARY KEY (series, run)
) STRICT, WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS acknowledgements(
    machine TEXT NOT NULL,
    boot_id TEXT NOT NULL,
    source TEXT NOT NULL,
    subject TEXT NOT NULL,
    counter TEXT NOT NULL,
    count INTEGER NOT NULL,
    by TEXT NOT NULL,
    at INTEGER NOT NULL,
    note TEXT
) STRICT;
CREATE INDEX IF NOT EXISTS acknowledgements_by_boot ON acknowledgements(machine, boot_id);
";

/// An open history file.
pub struct History {
    conn: Connection,
    path: PathBuf,
    /// Whether its figures keep the reference each was judged against (from version 3; a
    /// version 2 file opened only to read has no such columns).
    with_reference: bool,
}

type Result<T> = std::result::Result<T, HistoryError>;

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

impl History {
    /// Opens the history at `path` for recording, creating it (mode 0600, in a directory
    /// created 0700 when missing). A symlink is not followed.
    /// A file, or a directory on its way, that another user could change is refused
    /// ([`crate::trust`]): the history decides whether a node is drained.
    pub fn open(path: &Path) -> Result<History> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            if !dir.exists() {
                use std::os::unix::fs::DirBuilderExt;
                std::fs::DirBuilder::new()
                    .recursive(true)
                    .mode(0o700)
                    .create(dir)
                    .map_err(|e| open_error(path, &e.to_string()))?;
            }
        }
        let untrusted = |e: crate::trust::Untrusted| HistoryError::Untrusted {
            path: path.display().to_string(),
            why: e.0,
        };
        // Opened by its real path: a link on the way changed later cannot redirect it.
        let real = crate::trust::check_file(path).map_err(untrusted)?;
        for side in ["-wal", "-shm"] {
            let mut name = real.as_os_str().to_owned();
            name.push(side);
            crate::trust::check_existing_file(Path::new(&name)).map_err(untrusted)?;
        }
        let created = !real.exists();
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NOFOLLOW
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(&real, flags)
            .map_err(|e| open_error(path, &e.to_string()))?;
        if created {
            use std::os::unix::fs::PermissionsExt;
            let _ = std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o600));
        }
        let mut h = History {
            conn,
            path: path.to_path_buf(),
            with_reference: true,
        };
        h.prepare(true)?;
        Ok(h)
    }

    /// Opens an existing history for reading. On read-only media (a snapshot, a copy on a
    /// read-only mount), where SQLite cannot make the write-ahead log's index beside the file,
    /// it is opened as immutable: nothing can write it there anyway.
    pub fn open_existing(path: &Path) -> Result<History> {
        if !path.is_file() {
            return Err(open_error(path, "no such file"));
        }
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
            | OpenFlags::SQLITE_OPEN_NOFOLLOW
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let open = |target: &Path, flags: OpenFlags| -> Result<History> {
            let conn = Connection::open_with_flags(target, flags)
                .map_err(|e| open_error(path, &e.to_string()))?;
            let mut h = History {
                conn,
                path: path.to_path_buf(),
                with_reference: false,
            };
            h.prepare(false)?;
            h.with_reference = has_reference_columns(&h.conn).map_err(|e| h.db(e))?;
            Ok(h)
        };
        match open(path, flags) {
            Err(e) if !writable_dir(path) => {
                // Immutable means the write-ahead log is not read: runs still in it would be
                // missing without a word.
                let mut wal = path.as_os_str().to_owned();
                wal.push("-wal");
                if std::fs::metadata(&wal).is_ok_and(|m| m.len() > 0) {
                    return Err(open_error(
                        path,
                        "it is on read-only media and its write-ahead log (-wal) holds runs not \
                         yet in it: copy the file and its -wal to a writable directory and read \
                         the copy",
                    ));
                }
                let uri = immutable_uri(path);
                open(Path::new(&uri), flags | OpenFlags::SQLITE_OPEN_URI).map_err(|_| e)
            }
            other => other,
        }
    }

    /// Sets the connection up and checks (or, writable, creates) the schema. Runs started
    /// together may open a new file at once: each reads the file's identity in one transaction
    /// (separate reads could see a half-made file as another program's), the schema is created
    /// under the write lock after reading the identity again, and a step SQLite answers "busy"
    /// without waiting (switching the journal mode while another run does) is tried again until
    /// the busy timeout.
    fn prepare(&mut self, writable: bool) -> Result<()> {
        self.conn
            .busy_timeout(BUSY_TIMEOUT)
            .map_err(|e| self.db(e))?;
        let deadline = Instant::now() + BUSY_TIMEOUT;
        loop {
            match self.try_prepare(writable) {
                Ok(()) => return Ok(()),
                Err(Prepare::Sql(e)) if is_busy(&e) && Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(Prepare::Sql(e)) => return Err(self.db(e)),
                Err(Prepare::Identity(e)) => return Err(self.not_ours(&e.to_string())),
                Err(Prepare::Refused(e)) => return Err(e),
            }
        }
    }

    fn try_prepare(&mut self, writable: bool) -> std::result::Result<(), Prepare> {
        let first = {
            let tx = self.conn.transaction().map_err(Prepare::Sql)?;
            let id = read_identity(&tx)?;
            tx.commit().map_err(Prepare::Sql)?;
            id
        };
        check_identity(&self.path, first).map_err(Prepare::Refused)?;
        if !writable {
            if first.app != APPLICATION_ID {
                return Err(Prepare::Refused(
                    self.not_ours("no run has been recorded in it"),
                ));
            }
            return Ok(());
        }
        self.conn
            .execute_batch("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;")
            .map_err(Prepare::Sql)?;
        if first.app == APPLICATION_ID && first.version >= SCHEMA_VERSION {
            return Ok(());
        }
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(Prepare::Sql)?;
        let now = read_identity(&tx)?;
        check_identity(&self.path, now).map_err(Prepare::Refused)?;
        if now.app != APPLICATION_ID || now.version < SCHEMA_VERSION {
            tx.execute_batch(SCHEMA)
                .and_then(|_| add_reference_columns(&tx))
                .and_then(|_| tx.pragma_update(None, "application_id", APPLICATION_ID))
                .and_then(|_| tx.pragma_update(None, "user_version", SCHEMA_VERSION))
                .map_err(Prepare::Sql)?;
        }
        tx.commit().map_err(Prepare::Sql)
    }

    fn db(&self, e: rusqlite::Error) -> HistoryError {
        db_error(&self.path, e)
    }

    fn not_ours(&self, why: &str) -> HistoryError {
        not_ours(&self.path, why)
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The machine a document is about: its hashed machine id, else `host:<name>`.
    pub fn machine_of(doc: &Document) -> Option<String> {
        let id = doc.health_check.machine.as_ref();
        id.and_then(|m| m.machine_id.clone()).or_else(|| {
            id.and_then(|m| m.hostname.clone())
                .or_else(|| doc.system().and_then(|s| s.hostname.clone()))
                .map(|h| format!("host:{h}"))
        })
    }

    /// The machine's last recorded run, of any profile.
    pub fn last_run(&self, machine: &str) -> Result<Option<LastRun>> {
        // The last run that described the machine: a run of one section (`sleep`) did not.
        self.newest_where("machine = ?1 AND facts IS NOT NULL", machine)
    }

    /// The newest run of the boot `boot_id` that read error counters, whichever machine it was
    /// (a boot id is one machine's): what an operator acknowledges.
    pub fn last_run_of_boot(&self, boot_id: &str) -> Result<Option<LastRun>> {
        self.newest_where("boot_id = ?1 AND counters IS NOT NULL", boot_id)
    }

    /// The newest run matching `condition` (with `?1` bound to `value`).
    fn newest_where(&self, condition: &str, value: &str) -> Result<Option<LastRun>> {
        let row = self
            .conn
            .query_row(
                &format!("{SUMMARY} WHERE {condition} ORDER BY id DESC LIMIT 1"),
                params![value],
                |r| {
                    Ok((
                        summary(r)?,
                        r.get::<_, Option<String>>(10)?,
                        r.get::<_, Option<String>>(11)?,
                    ))
                },
            )
            .optional()
            .map_err(|e| self.db(e))?;
        Ok(row.map(|(summary, counters, facts)| LastRun {
            summary,
            counters: counters.and_then(|c| serde_json::from_str(&c).ok()),
            facts: facts
                .and_then(|f| serde_json::from_str(&f).ok())
                .unwrap_or_default(),
        }))
    }

    /// Records that `ack` covers each of `counters` (their counts since boot) of `machine` in
    /// the boot `boot_id`, in one transaction.
    pub fn acknowledge(
        &mut self,
        machine: &str,
        boot_id: &str,
        counters: &[ErrorCounter],
        ack: &Acknowledgement,
    ) -> Result<()> {
        let path = self.path.clone();
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(|e| db_error(&path, e))?;
        for c in counters {
            tx.execute(
                "INSERT INTO acknowledgements(machine, boot_id, source, subject, counter, count,
                     by, at, note) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
                params![
                    machine,
                    boot_id,
                    c.source,
                    c.subject,
                    c.counter,
                    c.total as i64,
                    ack.by,
                    ack.at_unix as i64,
                    ack.note
                ],
            )
            .map_err(|e| db_error(&path, e))?;
        }
        tx.commit().map_err(|e| db_error(&path, e))
    }

    /// The newest acknowledgement of each counter of `machine` in the boot `boot_id`, keyed by
    /// (source, subject, counter).
    pub fn acknowledgements(
        &self,
        machine: &str,
        boot_id: &str,
    ) -> Result<BTreeMap<(String, String, String), Acknowledgement>> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT source, subject, counter, count, by, at, note FROM acknowledgements
                 WHERE machine = ?1 AND boot_id = ?2 ORDER BY rowid",
            )
            .map_err(|e| self.db(e))?;
        let rows = stmt
            .query_map(params![machine, boot_id], |r| {
                Ok((
                    (r.get(0)?, r.get(1)?, r.get(2)?),
                    Acknowledgement {
                        count: r.get::<_, i64>(3)?.max(0) as u64,
                        by: r.get(4)?,
                        at_unix: r.get::<_, i64>(5)?.max(0) as u64,
                        note: r.get(6)?,
                    },
                ))
            })
            .and_then(|rows| rows.collect::<rusqlite::Result<Vec<_>>>())
            .map_err(|e| self.db(e))?;
        // Later rows replace earlier ones.
        Ok(rows.into_iter().collect())
    }

    /// The machine's earlier runs of `profile` (the last `runs`, oldest first) and, for each of
    /// `figures`, its values in them measured the same way (same basis), oldest first.
    pub fn past(
        &self,
        machine: &str,
        profile: &str,
        figures: &[Figure],
        runs: usize,
    ) -> Result<(Vec<RunSummary>, Points)> {
        let mut stmt = self
            .conn
            .prepare_cached(&format!(
                "{SUMMARY} WHERE machine = ?1 AND profile = ?2 ORDER BY id DESC LIMIT ?3"
            ))
            .map_err(|e| self.db(e))?;
        let mut earlier: Vec<RunSummary> = stmt
            .query_map(params![machine, profile, runs as i64], summary)
            .and_then(|rows| rows.collect())
            .map_err(|e| self.db(e))?;
        earlier.reverse();
        let mut by_name = BTreeMap::new();
        let mut stmt = self
            .conn
            .prepare_cached(&format!(
                "SELECT {} FROM series s
                     JOIN figures f ON f.series = s.id
                     WHERE s.machine = ?1 AND s.name = ?2 AND s.profile = ?3 AND s.basis = ?4
                     ORDER BY f.run DESC LIMIT ?5",
                point_columns("f.", self.with_reference)
            ))
            .map_err(|e| self.db(e))?;
        for fig in figures {
            let name = fig.name();
            let mut points: Vec<Point> = stmt
                .query_map(
                    params![machine, name, profile, &*fig.basis, runs as i64],
                    point,
                )
                .and_then(|rows| rows.collect())
                .map_err(|e| db_error(&self.path, e))?;
            if !points.is_empty() {
                points.reverse();
                by_name.insert(name, points);
            }
        }
        Ok((earlier, by_name))
    }

    /// Records a run in one transaction and applies `keep` to its machine's runs. Returns the
    /// run's number.
    pub fn append(&mut self, rec: &Record, keep: Keep) -> Result<i64> {
        self.append_at(rec, keep, unix_now())
    }

    /// [`History::append`] with retention judged at `now` (Unix seconds): this machine's clock.
    fn append_at(&mut self, rec: &Record, keep: Keep, now: u64) -> Result<i64> {
        let doc = rec.doc;
        let machine = Self::machine_of(doc).ok_or(HistoryError::NoMachine)?;
        let info = &doc.health_check;
        let system = doc.system();
        // Only a run with the system section describes the machine (NULL otherwise).
        let counters = system
            .and_then(|s| s.error_counters.as_ref())
            .and_then(|c| serde_json::to_string(&c.counters).ok());
        let facts = system.map(|s| s.fingerprint.clone());
        let json = serde_json::to_vec(doc).map_err(|e| self.db_text(&e.to_string()))?;
        let deflated = miniz_oxide::deflate::compress_to_vec(&json, 6);
        let statuses: BTreeMap<String, Status> = doc
            .checks
            .iter()
            .filter(|c| c.name.section == "history")
            .map(|c| (c.name.rule.clone(), c.status))
            .collect();
        let worst = doc
            .checks
            .iter()
            .map(|c| c.status)
            .min_by_key(|s| s.urgency());
        let path = self.path.clone();
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(|e| db_error(&path, e))?;
        let run = (|| -> rusqlite::Result<i64> {
            tx.execute(
                "INSERT INTO runs(machine, hostname, profile, started, seconds, boot_id, kernel,
                     firmware, worst, counters, facts, document)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
                params![
                    machine,
                    info.machine
                        .as_ref()
                        .and_then(|m| m.hostname.clone())
                        .or_else(|| system.and_then(|s| s.hostname.clone())),
                    info.profile.name(),
                    info.started_unix as i64,
                    info.seconds,
                    info.machine.as_ref().and_then(|m| m.boot_id.clone()),
                    system.and_then(|s| s.kernel.clone()),
                    facts.as_ref().and_then(|f| f.get("bios.version")),
                    worst.map(Status::as_str),
                    counters,
                    facts.as_ref().and_then(|f| serde_json::to_string(f).ok()),
                    deflated,
                ],
            )?;
            let run = tx.last_insert_rowid();
            let mut series_stmt = tx.prepare_cached(
                "INSERT INTO series(machine, name, profile, basis, unit, direction)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)
                 ON CONFLICT (machine, name, profile, basis) DO UPDATE SET unit = excluded.unit
                 RETURNING id",
            )?;
            let mut fig_stmt = tx.prepare_cached(
                "INSERT OR REPLACE INTO figures(series, run, started, value, noisy, status,
                     reference, reference_runs)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            )?;
            for f in rec.figures {
                let name = f.name();
                let series: i64 = series_stmt.query_row(
                    params![
                        machine,
                        name,
                        info.profile.name(),
                        &*f.basis,
                        f.family.unit,
                        direction_name(f.family.direction)
                    ],
                    |r| r.get(0),
                )?;
                fig_stmt.execute(params![
                    series,
                    run,
                    info.started_unix as i64,
                    f.value,
                    rec.noisy.contains(&f.family.section),
                    statuses.get(&name).map(|s| status_code(*s)),
                    rec.references.get(&name).map(|r| r.median),
                    rec.references.get(&name).map(|r| r.runs as i64),
                ])?;
            }
            drop(fig_stmt);
            drop(series_stmt);
            apply_keep(&tx, &machine, keep, now)?;
            Ok(run)
        })()
        .map_err(|e| db_error(&path, e))?;
        tx.commit().map_err(|e| db_error(&path, e))?;
        Ok(run)
    }

    fn db_text(&self, why: &str) -> HistoryError {
        HistoryError::Database {
            path: self.path.display().to_string(),
            why: why.to_string(),
        }
    }

    /// The machines `filter.host` names (by host name or machine id), or all.
    fn machines(&self, filter: &Filter) -> Result<Vec<String>> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT DISTINCT machine FROM runs
                 WHERE ?1 IS NULL OR hostname = ?1 OR machine = ?1 OR machine = 'host:' || ?1
                 ORDER BY machine",
            )
            .map_err(|e| self.db(e))?;
        stmt.query_map(params![filter.host], |r| r.get(0))
            .and_then(|rows| rows.collect())
            .map_err(|e| self.db(e))
    }

    /// The runs `filter` selects, oldest first.
    pub fn runs(&self, filter: &Filter) -> Result<Vec<RunSummary>> {
        let mut out = Vec::new();
        let mut stmt = self
            .conn
            .prepare(&format!(
                "{SUMMARY} WHERE machine = ?1 AND started >= ?2 AND (?3 IS NULL OR profile = ?3)
                 ORDER BY id"
            ))
            .map_err(|e| self.db(e))?;
        for m in self.machines(filter)? {
            let rows: Vec<RunSummary> = stmt
                .query_map(
                    params![m, filter.since.unwrap_or(0) as i64, filter.profile],
                    summary,
                )
                .and_then(|rows| rows.collect())
                .map_err(|e| db_error(&self.path, e))?;
            out.extend(rows);
        }
        out.sort_by_key(|r| r.run);
        Ok(out)
    }

    /// Each figure's trend over the runs `filter` selects, keyed by figure name (prefixed with
    /// the host where several machines are selected): the values of the series (profile and
    /// basis) its latest run measured; values measured another way are another series.
    pub fn trends(&self, filter: &Filter) -> Result<BTreeMap<String, Trend>> {
        let machines = self.machines(filter)?;
        let several = machines.len() > 1;
        let mut out = BTreeMap::new();
        // Each figure's series, the one with the latest run first.
        let mut listed = self
            .conn
            .prepare(
                "SELECT s.id, s.name, s.basis, s.unit, s.direction,
                        (SELECT max(run) FROM figures WHERE series = s.id) AS last
                 FROM series s WHERE s.machine = ?1 AND (?2 IS NULL OR s.profile = ?2)
                 ORDER BY s.name, last DESC",
            )
            .map_err(|e| self.db(e))?;
        let mut host = self
            .conn
            .prepare("SELECT hostname FROM runs WHERE machine = ?1 ORDER BY id DESC LIMIT 1")
            .map_err(|e| self.db(e))?;
        for m in &machines {
            type Row = (i64, String, String, String, String);
            let series: Vec<Row> = listed
                .query_map(params![m, filter.profile], |r| {
                    Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
                })
                .and_then(|rows| rows.collect())
                .map_err(|e| db_error(&self.path, e))?;
            let hostname: Option<String> = host
                .query_row(params![m], |r| r.get(0))
                .optional()
                .map_err(|e| db_error(&self.path, e))?
                .flatten();
            let mut seen = BTreeSet::new();
            for (id, name, basis, unit, direction) in series {
                if filter.figure.as_ref().is_some_and(|re| !re.is_match(&name))
                    || !seen.insert(name.clone())
                {
                    continue;
                }
                let points = self.points(id, filter.since)?;
                if points.is_empty() {
                    continue;
                }
                let key = if several {
                    format!("{} {name}", hostname.as_deref().unwrap_or(m))
                } else {
                    name
                };
                let direction = if direction == "lower" {
                    Direction::Lower
                } else {
                    Direction::Higher
                };
                out.insert(
                    key,
                    Trend {
                        unit,
                        direction,
                        basis,
                        points,
                    },
                );
            }
        }
        Ok(out)
    }

    /// One series' values, oldest first, from `since` on.
    fn points(&self, series: i64, since: Option<u64>) -> Result<Vec<Point>> {
        let mut stmt = self
            .conn
            .prepare_cached(&format!(
                "SELECT {} FROM figures WHERE series = ?1 AND started >= ?2 ORDER BY run",
                point_columns("", self.with_reference)
            ))
            .map_err(|e| self.db(e))?;
        stmt.query_map(params![series, since.unwrap_or(0) as i64], point)
            .and_then(|rows| rows.collect())
            .map_err(|e| db_error(&self.path, e))
    }

    /// The facts that changed between consecutive runs `filter` selects, per machine.
    pub fn changes(&self, filter: &Filter) -> Result<Vec<FactChange>> {
        let mut out = Vec::new();
        let mut stmt = self
            .conn
            .prepare(
                "SELECT id, started, facts FROM runs
                 WHERE machine = ?1 AND started >= ?2 AND facts IS NOT NULL ORDER BY id",
            )
            .map_err(|e| self.db(e))?;
        for m in self.machines(filter)? {
            // One run before the window, so a change at its start is seen.
            let rows: Vec<(i64, i64, String)> = stmt
                .query_map(params![m, filter.since.unwrap_or(0) as i64], |r| {
                    Ok((r.get(0)?, r.get(1)?, r.get(2)?))
                })
                .and_then(|rows| rows.collect())
                .map_err(|e| db_error(&self.path, e))?;
            let mut before: Option<(i64, BTreeMap<String, String>)> = None;
            for (run, started, facts) in rows {
                let facts: BTreeMap<String, String> =
                    serde_json::from_str(&facts).unwrap_or_default();
                if let Some((prev_run, prev)) = &before {
                    out.extend(fact_changes(prev, &facts, *prev_run, run, started as u64));
                }
                before = Some((run, facts));
            }
        }
        Ok(out)
    }

    /// The documents of the runs `filter` selects, oldest first (for the HTML report).
    pub fn documents(&self, filter: &Filter) -> Result<Vec<(RunSummary, Document)>> {
        let mut out = Vec::new();
        let mut stmt = self
            .conn
            .prepare(&format!(
                "{SUMMARY} WHERE machine = ?1 AND started >= ?2 ORDER BY id"
            ))
            .map_err(|e| self.db(e))?;
        let mut doc_stmt = self
            .conn
            .prepare("SELECT document FROM runs WHERE id = ?1")
            .map_err(|e| self.db(e))?;
        for m in self.machines(filter)? {
            let runs: Vec<RunSummary> = stmt
                .query_map(params![m, filter.since.unwrap_or(0) as i64], summary)
                .and_then(|rows| rows.collect())
                .map_err(|e| db_error(&self.path, e))?;
            for r in runs {
                let blob: Vec<u8> = doc_stmt
                    .query_row(params![r.run], |row| row.get(0))
                    .map_err(|e| db_error(&self.path, e))?;
                let json = miniz_oxide::inflate::decompress_to_vec_with_limit(
                    &blob,
                    usize::try_from(crate::wire::read::max_document_bytes()).unwrap_or(usize::MAX),
                )
                .map_err(|e| self.db_text(&format!("run {}: {e:?}", r.run)))?;
                let doc: Document = serde_json::from_slice(&json)
                    .map_err(|e| self.db_text(&format!("run {}: {e}", r.run)))?;
                out.push((r, doc));
            }
        }
        Ok(out)
    }

    /// SQLite's own check of the file (`PRAGMA integrity_check`): `Ok` when it is sound.
    pub fn check_integrity(&self) -> Result<()> {
        let verdict: String = self
            .conn
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .map_err(|e| self.db(e))?;
        if verdict == "ok" {
            Ok(())
        } else {
            Err(self.db_text(&format!("damaged: {verdict}")))
        }
    }

    /// Bytes the file and its write-ahead log take.
    pub fn size_bytes(&self) -> u64 {
        let wal = PathBuf::from(format!("{}-wal", self.path.display()));
        [self.path.as_path(), wal.as_path()]
            .iter()
            .filter_map(|p| std::fs::metadata(p).ok())
            .map(|m| m.len())
            .sum()
    }
}

/// Whether we can write the directory `path` is in (a read-only mount says no).
fn writable_dir(path: &Path) -> bool {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    nix::unistd::access(dir, nix::unistd::AccessFlags::W_OK).is_ok()
}

/// An SQLite URI that opens `path` as immutable (no locks, no write-ahead log index).
fn immutable_uri(path: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let mut uri = String::from("file:");
    for &b in path.as_os_str().as_bytes() {
        if b.is_ascii_alphanumeric() || b"/-_.~".contains(&b) {
            uri.push(b as char);
        } else {
            uri.push_str(&format!("%{b:02X}"));
        }
    }
    uri.push_str("?immutable=1");
    uri
}

/// The newest runs of a machine retention by age never deletes (the count still may): three
/// times the default reference window and then some.
const AGE_KEEPS_NEWEST: usize = 32;

/// The columns of a [`RunSummary`] (0 to 9), then counters and facts (10, 11).
const SUMMARY: &str = "SELECT id, started, machine, hostname, profile, boot_id, kernel, firmware,
    worst, seconds, counters, facts FROM runs";

fn summary(r: &rusqlite::Row) -> rusqlite::Result<RunSummary> {
    let worst: Option<String> = r.get(8)?;
    Ok(RunSummary {
        run: r.get(0)?,
        started_unix: r.get::<_, i64>(1)?.max(0) as u64,
        machine: r.get(2)?,
        hostname: r.get(3)?,
        profile: r.get(4)?,
        boot_id: r.get(5)?,
        kernel: r.get(6)?,
        firmware: r.get(7)?,
        worst: worst.as_deref().and_then(status_of),
        seconds: r.get(9)?,
    })
}

/// A file of version 2 (before each run kept the reference it was judged against) gains the
/// columns; its earlier rows keep none.
fn add_reference_columns(tx: &Connection) -> rusqlite::Result<()> {
    if has_reference_columns(tx)? {
        return Ok(());
    }
    tx.execute_batch(
        "ALTER TABLE figures ADD COLUMN reference REAL;
         ALTER TABLE figures ADD COLUMN reference_runs INTEGER;",
    )
}

/// Whether the figures table has the reference columns (a file of version 2 opened only to
/// read has not).
fn has_reference_columns(c: &Connection) -> rusqlite::Result<bool> {
    let mut stmt = c.prepare("SELECT name FROM pragma_table_info('figures')")?;
    let names: Vec<String> = stmt
        .query_map([], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    Ok(names.iter().any(|n| n == "reference"))
}

/// The columns a [`point`] reads, `f.` prefixed where `prefix` says.
fn point_columns(prefix: &str, with_reference: bool) -> String {
    let p = prefix;
    let reference = if with_reference {
        format!("{p}reference, {p}reference_runs")
    } else {
        "NULL, NULL".into()
    };
    format!("{p}run, {p}started, {p}value, {p}noisy, {p}status, {reference}")
}

fn point(r: &rusqlite::Row) -> rusqlite::Result<Point> {
    let status: Option<i64> = r.get(4)?;
    let median: Option<f64> = r.get(5)?;
    let runs: Option<i64> = r.get(6)?;
    Ok(Point {
        run: r.get(0)?,
        started_unix: r.get::<_, i64>(1)?.max(0) as u64,
        value: r.get(2)?,
        noisy: r.get(3)?,
        status: status.and_then(status_of_code),
        reference: median.zip(runs).map(|(median, runs)| PastReference {
            median,
            runs: runs.max(0) as usize,
        }),
    })
}

/// A verdict as the figures table stores it (a byte, not a word: one per figure and run).
const STATUS_CODES: [Status; 5] = [
    Status::Pass,
    Status::Warn,
    Status::Fail,
    Status::Skip,
    Status::Inconclusive,
];

fn status_code(s: Status) -> i64 {
    STATUS_CODES.iter().position(|c| *c == s).unwrap_or(0) as i64
}

fn status_of_code(code: i64) -> Option<Status> {
    usize::try_from(code)
        .ok()
        .and_then(|i| STATUS_CODES.get(i).copied())
}

fn status_of(text: &str) -> Option<Status> {
    serde_json::from_value(serde_json::Value::String(text.to_string())).ok()
}

fn direction_name(d: Direction) -> &'static str {
    match d {
        Direction::Higher => "higher",
        Direction::Lower => "lower",
    }
}

/// Deletes the machine's runs `keep` no longer keeps, with their figures: the runs beyond the
/// newest `keep.runs`, and the runs older than `keep.age`, neither more.
///
/// A run's age is taken from its clock, which can be wrong, so no one run's clock decides alone:
/// a run stamped before a run recorded earlier counts as that run's time (its clock was behind;
/// one run stamped in the year 2000 does not make every run before it "older than two years"),
/// runs go by age only while the run before this one is itself within the age (a clock years
/// ahead, or a machine back after longer than the age, deletes nothing until the next run
/// agrees; the count still bounds the file), and the age never takes the newest
/// [`AGE_KEEPS_NEWEST`] runs (several runs in a row with a clock years ahead, before NTP set it
/// right, cannot empty the past the machine is judged against).
fn apply_keep(
    tx: &rusqlite::Transaction,
    machine: &str,
    keep: Keep,
    now: u64,
) -> rusqlite::Result<()> {
    let by_count: Option<i64> = match keep.runs {
        Some(n) => tx
            .query_row(
                "SELECT id FROM runs WHERE machine = ?1 ORDER BY id DESC LIMIT 1 OFFSET ?2",
                params![machine, n as i64],
                |r| r.get(0),
            )
            .optional()?,
        None => None,
    };
    let by_age: Option<i64> = match keep.age {
        Some(age) => {
            // Times never go back along the ids, so the runs too old are a prefix of them.
            let cutoff = now.saturating_sub(age.as_secs()) as i64;
            let (last_old, newest_earlier): (Option<i64>, Option<i64>) = tx.query_row(
                "WITH t AS (SELECT id, max(started) OVER (ORDER BY id) AS at
                            FROM runs WHERE machine = ?1),
                      kept AS (SELECT id FROM t ORDER BY id DESC LIMIT ?3)
                 SELECT (SELECT max(id) FROM t WHERE at < ?2
                             AND id < (SELECT min(id) FROM kept)),
                        (SELECT at FROM t ORDER BY id DESC LIMIT 1 OFFSET 1)",
                params![machine, cutoff, AGE_KEEPS_NEWEST as i64],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )?;
            last_old.filter(|_| newest_earlier.is_some_and(|at| at >= cutoff))
        }
        None => None,
    };
    let Some(cutoff) = by_count.max(by_age) else {
        return Ok(());
    };
    tx.execute(
        "DELETE FROM figures WHERE run <= ?2
         AND series IN (SELECT id FROM series WHERE machine = ?1)",
        params![machine, cutoff],
    )?;
    tx.execute(
        "DELETE FROM runs WHERE machine = ?1 AND id <= ?2",
        params![machine, cutoff],
    )?;
    Ok(())
}

/// What a file says it is: its application id, schema version and number of schema objects.
#[derive(Clone, Copy)]
struct Identity {
    app: i32,
    version: i32,
    tables: i64,
}

/// Reads the identity; a busy answer is worth another try, any other failure means the file is
/// not an SQLite database we can use.
fn read_identity(c: &Connection) -> std::result::Result<Identity, Prepare> {
    let read = || -> rusqlite::Result<Identity> {
        Ok(Identity {
            app: c.query_row("PRAGMA application_id", [], |r| r.get(0))?,
            version: c.query_row("PRAGMA user_version", [], |r| r.get(0))?,
            tables: c.query_row("SELECT count(*) FROM sqlite_schema", [], |r| r.get(0))?,
        })
    };
    read().map_err(|e| {
        if is_busy(&e) {
            Prepare::Sql(e)
        } else {
            Prepare::Identity(e)
        }
    })
}

/// Why preparing a connection stopped.
enum Prepare {
    /// An SQL step failed (busy ones are tried again).
    Sql(rusqlite::Error),
    /// The file's identity could not be read: not an SQLite database.
    Identity(rusqlite::Error),
    /// The file is not ours to use.
    Refused(HistoryError),
}

fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(e, rusqlite::Error::SqliteFailure(f, _)
        if matches!(f.code, rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked))
}

/// Refuses another program's file and one written by a newer version.
fn check_identity(path: &Path, id: Identity) -> Result<()> {
    if id.app != APPLICATION_ID && (id.app != 0 || id.tables > 0) {
        return Err(not_ours(path, "another program's SQLite file"));
    }
    if id.version > SCHEMA_VERSION {
        return Err(not_ours(
            path,
            &format!(
                "written by a newer health_check (schema {}; this one reads up to \
                 {SCHEMA_VERSION})",
                id.version
            ),
        ));
    }
    Ok(())
}

fn not_ours(path: &Path, why: &str) -> HistoryError {
    HistoryError::NotOurs {
        path: path.display().to_string(),
        why: why.to_string(),
    }
}

fn open_error(path: &Path, why: &str) -> HistoryError {
    HistoryError::Open {
        path: path.display().to_string(),
        why: why.to_string(),
    }
}

fn db_error(path: &Path, e: rusqlite::Error) -> HistoryError {
    let why = match &e {
        rusqlite::Error::SqliteFailure(f, _) if f.code == rusqlite::ErrorCode::DatabaseBusy => {
            format!(
                "another run held the file longer than {} s",
                BUSY_TIMEOUT.as_secs()
            )
        }
        rusqlite::Error::SqliteFailure(f, _) if f.code == rusqlite::ErrorCode::ReadOnly => {
            "the file is read-only to this user".to_string()
        }
        rusqlite::Error::SqliteFailure(f, _) if f.code == rusqlite::ErrorCode::NotADatabase => {
            "not an SQLite file".to_string()
        }
        other => other.to_string(),
    };
    HistoryError::Database {
        path: path.display().to_string(),
        why,
    }
}

#[cfg(test)]
mod tests;
