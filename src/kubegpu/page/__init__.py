"""HTML page pieces shared by the faces that write pages (``kubegpu.report``, ``kubegpu.sim``).

Owns the page frame (``html``: head, Content-Security-Policy, sections, escaping), the inlined stylesheet
and script (``assets``) and PNG figures as ``data:`` URIs (``figures``).

Must not import: any other kubegpu package (it sits below the faces and beside nothing); no
third-party library at import time (matplotlib only inside ``figures.png_figure``).
"""
