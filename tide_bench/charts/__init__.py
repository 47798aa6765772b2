"""Charts for every layer, as SVG: the board's inline charts, the study's figures, the audit's
figure and the fine-tuning card's loss curve are drawn with the same pieces, colours and marks.

* :mod:`.svg`: scales, round ticks, text widths, marks, the red-blue scale (no plotting library:
  SVG text is all a chart here needs, and a board of 50 drew its charts in milliseconds instead
  of matplotlib's second);
* :mod:`.style`: the colour and marker of each condition, shared by all charts;
* :mod:`.figure`: standalone figures (a ``<title>``, a text alternative, a hover title on every
  point) of four kinds: intervals by category, points against x, lines, a heatmap.

The package sits just after ``core`` in the layer order (``tests/project/test_layering.py``): it reads
no results, only the numbers it is handed, so every stage may draw with it.
"""
