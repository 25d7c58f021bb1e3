"""The live leaderboard service behind ``rankci serve`` (needs ``pip install 'rankci[service]'``).

* :mod:`.spec` - a board's fixed description (models, items, shared order, monitor settings);
* :mod:`.board` - the board's state machine on top of :class:`rankci.sequential.Monitor`;
* :mod:`.snapshot` - the leaderboard JSON at a look (anytime-valid score intervals included);
* :mod:`.storage` - SQLite or PostgreSQL (:mod:`.storage_base` the interface,
  :mod:`.storage_sqlite`, :mod:`.storage_postgres`); :mod:`.auth` - tokens, stored hashed;
* :mod:`.commits` - group commit of the posts waiting on a board (:meth:`.board.Board.commit`);
* :mod:`.registry` - the boards of a database, loaded on first use;
* :mod:`.app` - :func:`create_app`, which assembles the routers :mod:`.routes_boards`,
  :mod:`.routes_scores`, :mod:`.routes_admin` and :mod:`.routes_pages`; :mod:`.deps` - the
  state they share and the one authorisation; :mod:`.middleware` - body limits, security
  headers; :mod:`.posting` - score posts and leaderboard reads answered on the event loop;
* :mod:`.page` - the web page's shell; :mod:`.sections` - its sections, rendered in the
  background.

See ``docs/service.md``.
"""

from rankci.service.app import create_app

__all__ = ["create_app"]
