"""`lmaudit report`: the papers' figures and tables from the marts, as PNGs and one self-contained HTML page."""
