//! CronJob schedules as the CronJob controller reads them (the standard
//! five-field syntax of `robfig/cron`, which Kubernetes uses), in UTC.
//!
//! - fields: minute (0–59), hour (0–23), day of month (1–31), month (1–12
//!   or `JAN`–`DEC`), day of week (0–7 or `SUN`–`SAT`, 0 and 7 both Sunday);
//! - each field: `*` or `?`, a value, a range `a-b`, a step `*/n`, `a-b/n`
//!   or `a/n` (from `a` to the maximum), or a comma-separated list of these;
//! - macros `@yearly` (`@annually`), `@monthly`, `@weekly`, `@daily`
//!   (`@midnight`), `@hourly`;
//! - day of month and day of week: when both are restricted a day matching
//!   *either* runs (cron's historical rule); when one is `*` (or `?`), both
//!   must match, and a stepped star (`*/2`) counts as restricted;
//! - the first run of a new CronJob is the first scheduled time strictly
//!   after its creation.

use jiff::civil::Date;
use jiff::tz::TimeZone;

/// Why a schedule does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CronError {
    /// Not five fields and not a known macro.
    #[error(
        "schedule `{0}`: expected five fields (minute hour day-of-month month day-of-week) or a macro such as @daily"
    )]
    Shape(String),
    /// A field that does not parse or is out of range.
    #[error("schedule `{schedule}`: the {field} field `{value}` is not valid")]
    Field {
        schedule: String,
        field: &'static str,
        value: String,
    },
}

/// A parsed schedule: one bit per allowed value of each field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Schedule {
    minutes: u64,
    hours: u64,
    days: u64,
    months: u64,
    weekdays: u64,
    /// Day of month or day of week was a plain `*`/`?`.
    day_star: bool,
}

#[derive(PartialEq, Eq)]
struct Field {
    name: &'static str,
    min: u32,
    max: u32,
    names: &'static [&'static str],
}

const MINUTE: Field = Field {
    name: "minute",
    min: 0,
    max: 59,
    names: &[],
};
const HOUR: Field = Field {
    name: "hour",
    min: 0,
    max: 23,
    names: &[],
};
const DAY: Field = Field {
    name: "day-of-month",
    min: 1,
    max: 31,
    names: &[],
};
const MONTH: Field = Field {
    name: "month",
    min: 1,
    max: 12,
    names: &[
        "JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC",
    ],
};
const WEEKDAY: Field = Field {
    name: "day-of-week",
    min: 0,
    max: 7,
    names: &["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"],
};

impl Field {
    fn value(&self, text: &str) -> Option<u32> {
        if let Some(i) = self.names.iter().position(|n| n.eq_ignore_ascii_case(text)) {
            // Months are numbered from 1, weekdays from 0 (Sunday).
            return Some(i as u32 + u32::from(self == &MONTH));
        }
        let v: u32 = text.parse().ok()?;
        (self.min..=self.max).contains(&v).then_some(v)
    }

    /// The bits of one field and whether it was a plain star.
    fn parse(&self, text: &str, schedule: &str) -> Result<(u64, bool), CronError> {
        let invalid = || CronError::Field {
            schedule: schedule.to_owned(),
            field: self.name,
            value: text.to_owned(),
        };
        let mut bits = 0u64;
        let mut star = false;
        for part in text.split(',') {
            let (range, step) = match part.split_once('/') {
                Some((range, step)) => {
                    let step: u32 = step.parse().map_err(|_| invalid())?;
                    if step == 0 {
                        return Err(invalid());
                    }
                    (range, Some(step))
                }
                None => (part, None),
            };
            let (start, end) = if range == "*" || range == "?" {
                star |= step.is_none_or(|s| s == 1);
                (self.min, self.max)
            } else if let Some((a, b)) = range.split_once('-') {
                let (a, b) = (
                    self.value(a).ok_or_else(invalid)?,
                    self.value(b).ok_or_else(invalid)?,
                );
                if a > b {
                    return Err(invalid());
                }
                (a, b)
            } else {
                let a = self.value(range).ok_or_else(invalid)?;
                // `a/n` runs from a to the maximum.
                (a, if step.is_some() { self.max } else { a })
            };
            let mut v = start;
            while v <= end {
                bits |= 1 << v;
                v += step.unwrap_or(1);
            }
        }
        Ok((bits, star))
    }
}

impl Schedule {
    /// Parses a CronJob's `spec.schedule`.
    pub fn parse(schedule: &str) -> Result<Schedule, CronError> {
        let text = match schedule.trim() {
            "@yearly" | "@annually" => "0 0 1 1 *",
            "@monthly" => "0 0 1 * *",
            "@weekly" => "0 0 * * 0",
            "@daily" | "@midnight" => "0 0 * * *",
            "@hourly" => "0 * * * *",
            other => other,
        };
        let fields: Vec<&str> = text.split_whitespace().collect();
        let [minute, hour, day, month, weekday] = fields.as_slice() else {
            return Err(CronError::Shape(schedule.to_owned()));
        };
        let (minutes, _) = MINUTE.parse(minute, schedule)?;
        let (hours, _) = HOUR.parse(hour, schedule)?;
        let (days, day_star) = DAY.parse(day, schedule)?;
        let (months, _) = MONTH.parse(month, schedule)?;
        let (mut weekdays, weekday_star) = WEEKDAY.parse(weekday, schedule)?;
        // 7 is Sunday too.
        if weekdays & (1 << 7) != 0 {
            weekdays |= 1;
        }
        Ok(Schedule {
            minutes,
            hours,
            days,
            months,
            weekdays,
            day_star: day_star || weekday_star,
        })
    }

    fn day_matches(&self, date: Date) -> bool {
        let day = self.days & (1 << date.day()) != 0;
        let weekday = self.weekdays & (1 << date.weekday().to_sunday_zero_offset()) != 0;
        if self.day_star {
            day && weekday
        } else {
            day || weekday
        }
    }

    /// The first scheduled time strictly after `after` (epoch seconds, UTC),
    /// as epoch seconds; `None` when none comes within five years (a
    /// schedule such as February 30th never runs).
    pub fn next_after(&self, after: i64) -> Option<i64> {
        let start = jiff::Timestamp::from_second(after.checked_add(60)? - after.rem_euclid(60))
            .ok()?
            .to_zoned(TimeZone::UTC);
        let mut date = start.date();
        let (mut hour, mut minute) = (start.hour() as u32, start.minute() as u32);
        for _ in 0..(5 * 366) {
            if self.months & (1 << date.month()) != 0 && self.day_matches(date) {
                for h in hour..24 {
                    if self.hours & (1 << h) == 0 {
                        continue;
                    }
                    let from = if h == hour { minute } else { 0 };
                    if let Some(m) = (from..60).find(|m| self.minutes & (1 << m) != 0) {
                        let at = date
                            .at(h as i8, m as i8, 0, 0)
                            .to_zoned(TimeZone::UTC)
                            .ok()?;
                        return Some(at.timestamp().as_second());
                    }
                }
            }
            date = date.tomorrow().ok()?;
            (hour, minute) = (0, 0);
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 2026-01-01T00:00:00Z, a Thursday.
    const NEW_YEAR: i64 = 1_767_225_600;
    const MIN: i64 = 60;
    const HOUR: i64 = 3600;
    const DAY: i64 = 86_400;

    fn next(schedule: &str, after: i64) -> Option<i64> {
        Schedule::parse(schedule)
            .unwrap_or_else(|e| panic!("{e}"))
            .next_after(after)
    }

    #[test]
    fn next_runs_follow_the_documented_syntax() {
        // (schedule, after, next), times relative to 2026-01-01T00:00Z.
        let table = [
            ("0 3 * * *", 0, 3 * HOUR),              // daily at 03:00
            ("0 3 * * *", 3 * HOUR, DAY + 3 * HOUR), // strictly after
            ("*/15 * * * *", 0, 15 * MIN),
            ("*/15 * * * *", 14 * MIN + 59, 15 * MIN),
            ("5 * * * *", 10 * MIN, HOUR + 5 * MIN),
            ("@hourly", 0, HOUR),
            ("@daily", 0, DAY),
            ("@midnight", 1, DAY),
            ("@weekly", 0, 3 * DAY), // the first Sunday is 2026-01-04
            ("0 0 * * SUN", 0, 3 * DAY),
            ("0 0 * * 7", 0, 3 * DAY),   // 7 is Sunday too
            ("0 0 * * MON-FRI", 0, DAY), // Friday the 2nd
            ("0 0 1 * *", 0, 31 * DAY),  // February 1st
            ("@monthly", 0, 31 * DAY),
            ("0 12 * FEB *", 0, 31 * DAY + 12 * HOUR),
            ("30 2 10-12 * *", 0, 9 * DAY + 2 * HOUR + 30 * MIN),
            ("0 0,12 * * *", HOUR, 12 * HOUR),
            ("10/20 * * * *", 0, 10 * MIN), // 10, 30, 50
            ("10/20 * * * *", 30 * MIN, 50 * MIN),
            ("@yearly", 0, 365 * DAY), // 2027-01-01
        ];
        for (schedule, after, want) in table {
            assert_eq!(
                next(schedule, NEW_YEAR + after),
                Some(NEW_YEAR + want),
                "{schedule} after +{after}s"
            );
        }
    }

    #[test]
    fn restricted_day_of_month_and_week_are_ored() {
        // Both restricted: the 15th OR any Monday; the first Monday of 2026
        // is the 5th, before the 15th.
        assert_eq!(next("0 0 15 * MON", NEW_YEAR), Some(NEW_YEAR + 4 * DAY));
        // One is a star: both must hold, and any weekday does.
        assert_eq!(next("0 0 15 * *", NEW_YEAR), Some(NEW_YEAR + 14 * DAY));
        assert_eq!(next("0 0 ? * MON", NEW_YEAR), Some(NEW_YEAR + 4 * DAY));
        // A stepped star counts as restricted: every other day OR Monday.
        // Day 3 is odd (days 1, 3, ... match */2 from 1).
        assert_eq!(next("0 0 */2 * MON", NEW_YEAR), Some(NEW_YEAR + 2 * DAY));
    }

    #[test]
    fn an_impossible_date_never_runs() {
        assert_eq!(next("0 0 30 2 *", NEW_YEAR), None);
    }

    #[test]
    fn malformed_schedules_are_errors() {
        for bad in [
            "",
            "* * * *",
            "* * * * * *",
            "60 * * * *",
            "* 24 * * *",
            "* * 0 * *",
            "* * * 13 *",
            "* * * * 8",
            "*/0 * * * *",
            "5-1 * * * *",
            "x * * * *",
            "@reboot",
        ] {
            assert!(Schedule::parse(bad).is_err(), "`{bad}` should be refused");
        }
    }
}
