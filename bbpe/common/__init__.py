"""What every bbpe model shares: reading a corpus (``corpus``, ``blocks``, ``gbk``), progress bars
(``progress``), threads (``threads``) and what the machine allows (``resources``)."""
