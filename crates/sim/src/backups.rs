//! Velero backups: the history each schedule had before the drill, the
//! backups it starts during the drill, and their phases.
//!
//! A backup starts `InProgress` and finishes once, `Completed` or
//! `PartiallyFailed` (or `Failed` when a fault says so); only a finished
//! `Completed` backup is usable for a restore, the newest one finished
//! before the loss.

use super::clock::{EPOCH_SECONDS, Time};
use drillbench_model::scenario::spec::BackupPhase;
use drillbench_model::topology::BackupSchedule;

/// One backup of a schedule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Backup {
    /// Name, as Velero names scheduled backups.
    pub name: String,
    /// Schedule.
    pub schedule: String,
    /// Start, in drill time (negative: before the drill).
    pub started: i64,
    /// Finish, when it finished.
    pub finished: Option<i64>,
    /// Phase.
    pub phase: BackupPhase,
}

/// Why a backup could not be marked failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum FailRefused {
    /// The schedule has no backup.
    NoBackup,
    /// The newest backup (named) is still running.
    InProgress(String),
}

/// Every backup, oldest first.
#[derive(Debug, Clone, Default)]
pub(crate) struct Backups {
    list: Vec<Backup>,
}

impl Backups {
    /// Every backup, oldest first.
    pub(crate) fn all(&self) -> &[Backup] {
        &self.list
    }

    /// A schedule's history before the drill: three earlier completed
    /// backups (what a restore may fall back to) and the newest, in the
    /// phase the drill says it is in. Returns when the schedule starts its
    /// next backup, if that is during the drill.
    pub(crate) fn seed_history(&mut self, schedule: &BackupSchedule) -> Option<Time> {
        let every = schedule.every.as_millis() as i64;
        let newest = -(schedule.last_started_ago.as_millis() as i64);
        let duration = schedule.duration.as_millis() as i64;
        for k in (1..=3).rev() {
            let started = newest - k * every;
            self.list.push(Backup {
                name: backup_name(&schedule.schedule, started),
                schedule: schedule.schedule.clone(),
                started,
                finished: Some(started + duration),
                phase: BackupPhase::Completed,
            });
        }
        let finished =
            (schedule.last_phase != BackupPhase::InProgress).then_some(newest + duration);
        self.list.push(Backup {
            name: backup_name(&schedule.schedule, newest),
            schedule: schedule.schedule.clone(),
            started: newest,
            finished,
            phase: schedule.last_phase,
        });
        let next = newest + every;
        (next >= 0).then_some(next as Time)
    }

    /// A backup named `name` of `schedule` starts at `started`; returns its
    /// index, by which it finishes.
    pub(crate) fn start(&mut self, name: &str, schedule: &str, started: Time) -> usize {
        self.list.push(Backup {
            name: name.to_owned(),
            schedule: schedule.to_owned(),
            started: started as i64,
            finished: None,
            phase: BackupPhase::InProgress,
        });
        self.list.len() - 1
    }

    /// A backup finishes at `at` in `phase`; returns its name.
    pub(crate) fn finish(&mut self, index: usize, at: Time, phase: BackupPhase) -> String {
        let b = &mut self.list[index];
        b.finished = Some(at as i64);
        b.phase = phase;
        b.name.clone()
    }

    /// The newest backup of a schedule is marked `Failed` (finished at
    /// `at` if it had not); returns its name. One still in progress is
    /// refused: its scheduled finish would overwrite the phase.
    pub(crate) fn fail_newest(&mut self, schedule: &str, at: Time) -> Result<String, FailRefused> {
        let index = self
            .list
            .iter()
            .rposition(|b| b.schedule == schedule)
            .ok_or(FailRefused::NoBackup)?;
        let backup = &mut self.list[index];
        if backup.phase == BackupPhase::InProgress {
            return Err(FailRefused::InProgress(backup.name.clone()));
        }
        backup.phase = BackupPhase::Failed;
        backup.finished = backup.finished.or(Some(at as i64));
        Ok(backup.name.clone())
    }

    /// The backup a restore after a loss at `lost_at` uses: the newest
    /// (by start) `Completed` backup of the schedule finished by then.
    pub(crate) fn usable(&self, schedule: &str, lost_at: Time) -> Option<&Backup> {
        self.list
            .iter()
            .filter(|b| {
                b.schedule == schedule
                    && b.phase == BackupPhase::Completed
                    && b.finished.is_some_and(|f| f <= lost_at as i64)
            })
            .max_by_key(|b| b.started)
    }
}

/// A backup's name as Velero gives it: the schedule and the start time
/// (`YYYYMMDDhhmmss`, drill time from the fixed epoch).
pub(crate) fn backup_name(schedule: &str, started_ms: i64) -> String {
    let seconds = EPOCH_SECONDS + started_ms.div_euclid(1000);
    let stamp = jiff::Timestamp::from_second(seconds)
        .map(|t| t.strftime("%Y%m%d%H%M%S").to_string())
        .unwrap_or_default();
    format!("{schedule}-{stamp}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use drillbench_model::duration::Duration;

    fn schedule(last_phase: BackupPhase, ago: Duration) -> BackupSchedule {
        BackupSchedule {
            schedule: "daily".to_owned(),
            every: Duration::from_mins(60),
            duration: Duration::from_mins(5),
            failure_probability: 0.0,
            last_started_ago: ago,
            last_phase,
            excluded: Vec::new(),
        }
    }

    #[test]
    fn names_follow_velero_from_the_fixed_epoch() {
        assert_eq!(backup_name("daily", 0), "daily-20260101000000");
        assert_eq!(backup_name("daily", 61_000), "daily-20260101000101");
        assert_eq!(backup_name("daily", -1), "daily-20251231235959");
    }

    #[test]
    fn the_history_has_three_completed_backups_before_the_newest() {
        let mut backups = Backups::default();
        let next =
            backups.seed_history(&schedule(BackupPhase::InProgress, Duration::from_mins(10)));
        let all = backups.all();
        assert_eq!(all.len(), 4);
        let starts: Vec<i64> = all.iter().map(|b| b.started).collect();
        let hour = 3_600_000;
        let newest = -600_000;
        assert_eq!(
            starts,
            [newest - 3 * hour, newest - 2 * hour, newest - hour, newest]
        );
        assert!(
            all[..3]
                .iter()
                .all(|b| b.phase == BackupPhase::Completed
                    && b.finished == Some(b.started + 300_000))
        );
        assert_eq!(all[3].phase, BackupPhase::InProgress);
        assert_eq!(all[3].finished, None, "still running");
        assert_eq!(next, Some((newest + hour) as Time));
    }

    #[test]
    fn a_schedule_whose_next_start_has_passed_starts_nothing() {
        let mut backups = Backups::default();
        let next = backups.seed_history(&schedule(BackupPhase::Completed, Duration::from_mins(61)));
        assert_eq!(next, None);
        assert_eq!(backups.all()[3].finished, Some(-61 * 60_000 + 300_000));
    }

    #[test]
    fn a_started_backup_finishes_once_in_its_phase() {
        let mut backups = Backups::default();
        let i = backups.start("daily-x", "daily", 1_000);
        assert_eq!(backups.all()[i].phase, BackupPhase::InProgress);
        assert_eq!(
            backups.finish(i, 5_000, BackupPhase::PartiallyFailed),
            "daily-x"
        );
        let b = &backups.all()[i];
        assert_eq!(
            (b.started, b.finished, b.phase),
            (1_000, Some(5_000), BackupPhase::PartiallyFailed)
        );
    }

    #[test]
    fn only_a_finished_backup_can_be_failed() {
        let mut backups = Backups::default();
        assert_eq!(backups.fail_newest("daily", 0), Err(FailRefused::NoBackup));
        let i = backups.start("daily-a", "daily", 0);
        assert_eq!(
            backups.fail_newest("daily", 10),
            Err(FailRefused::InProgress("daily-a".to_owned()))
        );
        backups.finish(i, 20, BackupPhase::Completed);
        assert_eq!(backups.fail_newest("daily", 30), Ok("daily-a".to_owned()));
        let b = &backups.all()[i];
        assert_eq!(
            (b.phase, b.finished),
            (BackupPhase::Failed, Some(20)),
            "the finish stays"
        );
    }

    #[test]
    fn a_restore_uses_the_newest_completed_backup_finished_before_the_loss() {
        let mut backups = Backups::default();
        let a = backups.start("a", "daily", 0);
        backups.finish(a, 100, BackupPhase::Completed);
        let b = backups.start("b", "daily", 200);
        backups.finish(b, 300, BackupPhase::PartiallyFailed);
        let c = backups.start("c", "daily", 400);
        backups.finish(c, 500, BackupPhase::Completed);
        let other = backups.start("o", "weekly", 450);
        backups.finish(other, 460, BackupPhase::Completed);
        backups.start("d", "daily", 600);
        let name = |at| backups.usable("daily", at).map(|b| b.name.clone());
        assert_eq!(name(99), None, "nothing finished yet");
        assert_eq!(
            name(350),
            Some("a".to_owned()),
            "a partial failure is not usable"
        );
        assert_eq!(name(500), Some("c".to_owned()));
        assert_eq!(
            name(10_000),
            Some("c".to_owned()),
            "one still running is not usable"
        );
    }
}
