// Times as the console shows them. Every time the console shows is airport time: the zone
// (sis.timezone) that the log-in and GET /api/v1/me answer, named in the header on every
// page. Never the browser's zone: a console in a UTC browser showed "Received 02:07" for a
// message taken at 10:07.
import { zone } from './session.js';

// RFC3339 matches a full timestamp as the API writes it (UTC "…Z" or with an offset).
export const RFC3339 = /^\d{4}-\d\d-\d\dT\d\d:\d\d(:\d\d(\.\d+)?)?(Z|[+-]\d\d:\d\d)$/;

// fmtTime shows s in airport time, "2026-12-04 10:07:00".
export function fmtTime(s) {
  if (!s) return '';
  const z = zoneParts(s, zone());
  return z ? `${z.day} ${z.hms}` : String(s);
}

// zoneFields returns the calendar fields of instant d in zone tz (numbers), or null.
function zoneFields(d, tz) {
  let parts;
  try {
    parts = zoneFormat(tz).formatToParts(d);
  } catch (e) {
    return null;
  }
  const p = Object.fromEntries(parts.map(x => [x.type, Number(x.value)]));
  return { y: p.year, mo: p.month, d: p.day, h: p.hour, mi: p.minute, s: p.second };
}

const zoneFormats = new Map();
function zoneFormat(tz) {
  let f = zoneFormats.get(tz);
  if (!f) {
    f = new Intl.DateTimeFormat('en-CA', { timeZone: tz, year: 'numeric', month: '2-digit', day: '2-digit',
      hour: '2-digit', minute: '2-digit', second: '2-digit', hourCycle: 'h23' });
    zoneFormats.set(tz, f);
  }
  return f;
}

// zoneOffsetMin is zone tz's offset from UTC at instant ms, in minutes (480 for +08:00).
function zoneOffsetMin(ms, tz) {
  const f = zoneFields(new Date(ms), tz);
  if (!f) return 0;
  return Math.round((Date.UTC(f.y, f.mo - 1, f.d, f.h, f.mi, f.s) - Math.floor(ms / 1000) * 1000) / 60000);
}

// localISO writes an RFC 3339 time as the same instant in airport time with its offset
// ("2026-12-04T10:07:00+08:00"), for the JSON the console shows (decoded messages, payloads).
function localISO(s) {
  const d = new Date(s);
  const z = zoneParts(s, zone());
  if (!z || isNaN(d)) return s;
  const off = zoneOffsetMin(d.getTime(), zone());
  const p = n => String(Math.floor(Math.abs(n))).padStart(2, '0');
  return `${z.day}T${z.hms}${off === 0 ? 'Z' : (off < 0 ? '-' : '+') + p(off / 60) + ':' + p(off % 60)}`;
}

// jsonText is JSON for reading, with every RFC 3339 time in airport time.
export function jsonText(v) {
  return JSON.stringify(v, (k, x) => typeof x === 'string' && RFC3339.test(x) ? localISO(x) : x, 2);
}

// INNER_TIME finds RFC 3339 times inside a server's text (a head's "next attempt
// 2026-12-04T02:07:00Z", an error, a note).
const INNER_TIME = /\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)/g;

// srvText is a server's free text with every RFC 3339 time in it written in airport time.
export function srvText(s) {
  if (s === null || s === undefined) return '';
  return String(s).replace(INNER_TIME, t => fmtTime(t));
}

// airportInstant reads "YYYY-MM-DD", "YYYY-MM-DD HH:MM" or "YYYY-MM-DDTHH:MM[:SS]" as airport
// time (or an RFC 3339 time with its own zone) and returns the instant, or null.
export function airportInstant(text) {
  const t = String(text || '').trim();
  if (RFC3339.test(t)) return new Date(t);
  const m = /^(\d{4})-(\d\d)-(\d\d)(?:[ T](\d\d):(\d\d)(?::(\d\d))?)?$/.exec(t);
  if (!m) return null;
  const [y, mo, d, hh, mi, ss] = m.slice(1).map(x => Number(x || 0));
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || hh > 23 || mi > 59 || ss > 59) return null;
  const wall = Date.UTC(y, mo - 1, d, hh, mi, ss);
  // The offset at the wall time read as UTC, then at the instant that gives (a zone change
  // between them moves it once more).
  let at = wall - zoneOffsetMin(wall, zone()) * 60000;
  at = wall - zoneOffsetMin(at, zone()) * 60000;
  return new Date(at);
}

// isoDay says whether s is a date written YYYY-MM-DD that exists.
export function isoDay(s) {
  const m = /^(\d{4})-(\d\d)-(\d\d)$/.exec(String(s || ''));
  if (!m) return false;
  const d = new Date(Date.UTC(+m[1], +m[2] - 1, +m[3]));
  return d.getUTCFullYear() === +m[1] && d.getUTCMonth() === +m[2] - 1 && d.getUTCDate() === +m[3];
}

// addDays moves an ISO day by n days.
export function addDays(day, n) {
  const [y, m, d] = day.split('-').map(Number);
  return new Date(Date.UTC(y, m - 1, d + n)).toISOString().slice(0, 10);
}

export function fmtAge(seconds) {
  if (seconds === null || seconds === undefined || isNaN(seconds)) return '';
  seconds = Math.max(0, Math.round(seconds));
  if (seconds < 60) return seconds + 's';
  if (seconds < 3600) return Math.floor(seconds / 60) + 'm ' + (seconds % 60) + 's';
  if (seconds < 86400) return Math.floor(seconds / 3600) + 'h ' + Math.floor(seconds % 3600 / 60) + 'm';
  return Math.floor(seconds / 86400) + 'd ' + Math.floor(seconds % 86400 / 3600) + 'h';
}

export function ago(s) {
  if (!s) return '';
  const d = new Date(s);
  return isNaN(d) ? '' : fmtAge((Date.now() - d.getTime()) / 1000) + ' ago';
}

// zoneParts returns the date (YYYY-MM-DD) and time (HH:MM, HH:MM:SS) of s in zone tz, or null.
export function zoneParts(s, tz) {
  const d = new Date(s);
  if (!s || isNaN(d)) return null;
  const f = zoneFields(d, tz);
  if (!f) return null;
  const p = n => String(n).padStart(2, '0');
  return { day: `${f.y}-${p(f.mo)}-${p(f.d)}`, hm: `${p(f.h)}:${p(f.mi)}`, hms: `${p(f.h)}:${p(f.mi)}:${p(f.s)}` };
}
