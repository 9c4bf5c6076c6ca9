// msgx console: one page, hash routes, plain DOM, as native ES modules with no build step.
// Every piece of server data is written with textContent or setAttribute through h() (dom.js),
// never as markup; every route of the API the console calls is named in api.js.
//
// This module starts the console: it registers each view (views/*.js) under the name of its
// route (#/NAME/ARG?QUERY), wires the header, and shows the first page once it knows who is
// logged in.
import { fill, h, link } from './dom.js';
import { loadSession } from './header.js';
import { go, route, views } from './router.js';
import { fmtTime } from './time.js';
import { auditView } from './views/audit.js';
import { deadView } from './views/dead.js';
import { eventsView } from './views/events.js';
import { findView } from './views/find.js';
import { flightView } from './views/flight.js';
import { flightsView } from './views/flights.js';
import { jobsView } from './views/jobs.js';
import { loginView } from './views/login.js';
import { messageView } from './views/message.js';
import { messagesView } from './views/messages.js';
import { overviewView } from './views/overview.js';
import { requestsView } from './views/requests.js';

Object.assign(views, {
  login: loginView,
  notfound: ({ view }) => fill(view, h('p', {}, 'No such page. ', link('/', 'Back to the overview'))),
  overview: overviewView,
  messages: messagesView,
  message: messageView,
  events: eventsView,
  dead: deadView,
  flights: flightsView,
  flight: flightView,
  requests: requestsView,
  jobs: jobsView,
  audit: auditView,
  find: findView,
});

// The header's search box: Enter opens #/find?q=…, which opens the flight when exactly one
// flight matches and lists the hits otherwise.
document.getElementById('search').addEventListener('submit', ev => {
  ev.preventDefault();
  const q = document.getElementById('search-q').value.trim();
  if (q) go('/find', { q });
});

// fmtTime stays a global of the page, as every function of the one classic script was: the
// browser tests call it there to check the console's airport time apart from the pages.
window.fmtTime = fmtTime;

window.addEventListener('hashchange', route);
window.addEventListener('keydown', ev => {
  if (ev.key === 'Escape' && !document.getElementById('modal').hidden) document.getElementById('modal-cancel').click();
});
loadSession().then(route);
